package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the master to read, the slave to give
// a process as its standard error.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal on this host: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the terminal's slave: %v", err)
	}
	return m, s
}

// TestLogFormat runs the built ptcd with standard error on a terminal and
// on a pipe: logging.format auto (the default) writes text to a terminal
// and JSON elsewhere; json and text choose one either way. ptcd logs an
// unknown PTC_ variable, then stops at a port in use.
func TestLogFormat(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	const text, json = `level=WARN msg="unknown PTC_ environment variable ignored" name=PTC_NO_SUCH_KEY`, `{"time":`
	cases := []struct {
		name     string
		terminal bool
		format   string
		want     string
	}{
		{"auto on a terminal", true, "", text},
		{"auto on a pipe", false, "", json},
		{"json on a terminal", true, "json", json},
		{"text on a pipe", false, "text", text},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--listen", taken.Addr().String(), "--metrics-listen", ""}
			if tc.format != "" {
				args = append(args, "--logging.format", tc.format)
			}
			cmd := exec.Command(ptcdBin, args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PTC_NO_SUCH_KEY=1"}
			var got string
			if tc.terminal {
				master, slave := openPTY(t)
				defer master.Close()
				cmd.Stderr = slave
				err = cmd.Run()
				slave.Close()
				b, rerr := io.ReadAll(master) // ends with EIO once the slave is closed everywhere
				var pe *os.PathError
				if rerr != nil && !errors.As(rerr, &pe) {
					t.Fatal(rerr)
				}
				got = string(b)
			} else {
				var errb bytes.Buffer
				cmd.Stderr = &errb
				err = cmd.Run()
				got = errb.String()
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("ptcd: %v, want exit 1 at the port in use\n%s", err, got)
			}
			first, _, _ := strings.Cut(got, "\n")
			if !strings.Contains(first, tc.want) {
				t.Fatalf("first line %q, want it to contain %q", first, tc.want)
			}
		})
	}
}
