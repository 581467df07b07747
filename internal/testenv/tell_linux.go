//go:build linux

package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// tellGoCommand writes line to the standard error of the go command that
// started this test binary, so that `go test ./...` shows it even though
// it discards a passing package's output. It does nothing when the
// parent is not the go command, when this binary's standard output is
// the go command's own (`go test` without packages streams it: the line
// was seen), or when the go command's standard error is a file not
// opened for appending (writing there would race its own writes).
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
	switch mode := fi.Mode(); {
	case mode&(os.ModeCharDevice|os.ModeNamedPipe|os.ModeSocket) != 0:
	case mode.IsRegular() && openedForAppend(proc+"/fdinfo/2"):
	default:
		return
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	// One write of one short line: atomic on a pipe, so it never lands
	// inside a line of the go command's.
	_, _ = f.WriteString(line + "\n")
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
