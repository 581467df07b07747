package mcp

import (
	"os/exec"
	"syscall"
)

// bindLifetime makes the server process die with ptcd.
func bindLifetime(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
