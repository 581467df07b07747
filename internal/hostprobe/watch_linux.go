package hostprobe

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watch reports the opens and reads of files in one directory, by any
// process, through inotify. It is how a test proves that an execution
// touched no file: watch a directory whose files the scripts name, run
// them, and expect no events.
type Watch struct {
	fd  int
	dir string
}

// NewWatch starts watching dir (not its subdirectories).
func NewWatch(dir string) (*Watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("hostprobe: inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("hostprobe: watch %s: %w", dir, err)
	}
	return &Watch{fd: fd, dir: dir}, nil
}

// Events drains the events queued so far and returns one line per event
// ("open name", "access name"; the name is empty for the directory
// itself).
func (w *Watch) Events() ([]string, error) {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("hostprobe: read inotify events: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			name := string(nameBytes)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			kind := "access"
			if ev.Mask&unix.IN_OPEN != 0 {
				kind = "open"
			}
			out = append(out, kind+" "+name)
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// Close stops watching.
func (w *Watch) Close() error { return unix.Close(w.fd) }
