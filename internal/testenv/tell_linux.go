//go:build linux

package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tellGoCommand writes line to the standard error of the go command that
// started this test binary, so that `go test ./...` shows it even though
// it discards a passing package's output. It does nothing when the
// parent is not the go command, or when this binary's standard output is
// the go command's own (`go test` without packages streams it: the line
// was seen).
//
// A terminal, a pipe or a file opened for appending is opened again and
// written. A file opened without O_APPEND (`go test ./... > log 2>&1`)
// cannot be: a write through a new opening lands at the file's end, where
// the go command's next line, written at its own offset, overwrites it.
// There the line goes through a copy of the go command's own descriptor
// (pidfd_getfd, Linux 5.6), which shares its offset, so the line lands in
// sequence in the log. Where the kernel refuses the copy (Yama's
// ptrace_scope 1 allows it only to an ancestor), the line goes to the
// controlling terminal, if there is one, so that it is seen if not saved.
func tellGoCommand(line string) {
	ppid := os.Getppid()
	proc := "/proc/" + strconv.Itoa(ppid)
	exe, err := os.Readlink(proc + "/exe")
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "go") {
		return
	}
	if sameFile(os.Stdout, proc+"/fd/1") {
		return
	}
	target := proc + "/fd/2"
	fi, err := os.Stat(target)
	if err != nil {
		return
	}
	var f *os.File
	switch mode := fi.Mode(); {
	case mode&(os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket) != 0,
		mode.IsRegular() && openedForAppend(proc+"/fdinfo/2"):
		f, err = os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	case mode.IsRegular():
		if f, err = sharedDescriptor(ppid, 2); err != nil {
			f, err = os.OpenFile("/dev/tty", os.O_WRONLY, 0)
		}
	default:
		return
	}
	if err != nil {
		return
	}
	defer f.Close()
	// One write of one short line: atomic on a pipe, so it never lands
	// inside a line of the go command's.
	_, _ = f.WriteString(line + "\n")
}

// sharedDescriptor returns a copy of process pid's descriptor fd that
// shares its open file description (its offset, its flags).
func sharedDescriptor(pid, fd int) (*os.File, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pidfd)
	dup, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(dup), "go command's descriptor"), nil
}

// sameFile reports whether f is the file at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// openedForAppend reports whether the fdinfo file at path shows O_APPEND.
func openedForAppend(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_APPEND != 0
		}
	}
	return false
}
