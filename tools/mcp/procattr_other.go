//go:build !linux

package mcp

import "os/exec"

// bindLifetime is a no-op where the OS cannot tie a child's life to ptcd's.
func bindLifetime(cmd *exec.Cmd) {}
