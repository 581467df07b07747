package adversarial

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// fifoProbe detects that some process opens a path: the path is a named
// pipe, and a writer can open a pipe without blocking only while a reader
// holds it open. The probe polls for that, so an open of the path by ptcd
// or a worker — which blocks until a writer comes — is seen, answered with
// a small valid source map (so that whatever reads it is not stuck) and
// counted.
type fifoProbe struct {
	path   string
	opens  atomic.Int32
	stopc  chan struct{}
	done   chan struct{}
	closed sync.Once
}

// leakMarker is the name of the source the probe's source map maps to:
// text derived from the file's contents, if it shows anywhere.
const leakMarker = "HOST-FILE-CONTENTS-LEAKED"

// newFIFOProbe creates the pipe at path and starts watching it.
func newFIFOProbe(path string) (*fifoProbe, error) {
	if err := unix.Mkfifo(path, 0o666); err != nil {
		return nil, err
	}
	p := &fifoProbe{path: path, stopc: make(chan struct{}), done: make(chan struct{})}
	// The goroutine ends when stop closes stopc.
	go func() {
		defer close(p.done)
		for {
			fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err == nil {
				p.opens.Add(1)
				_, _ = unix.Write(fd, []byte(`{"version":3,"file":"x","sources":["`+leakMarker+`"],"names":[],"mappings":"AAAA"}`))
				_ = unix.Close(fd)
			} else if !errors.Is(err, unix.ENXIO) {
				return
			}
			select {
			case <-p.stopc:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return p, nil
}

// stop ends the watch and returns how many opens were seen.
func (p *fifoProbe) stop() int {
	p.closed.Do(func() { close(p.stopc) })
	<-p.done
	// A last look: an open that raced with the end of the watch.
	if fd, err := unix.Open(p.path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		p.opens.Add(1)
		_ = unix.Close(fd)
	}
	return int(p.opens.Load())
}

// probes are the pipes watched for one case.
type probes []*fifoProbe

// stop stops every probe and returns the paths that were opened.
func (ps probes) stop() []string {
	var opened []string
	for _, p := range ps {
		if n := p.stop(); n > 0 {
			opened = append(opened, fmt.Sprintf("%s (%d opens)", p.path, n))
		}
	}
	return opened
}

// probePath creates the probes for one case and returns the path a script
// should name: absolute, or relative to the working directory of the
// process that runs scripts (ptcd itself in-process, / for workers). An
// absolute path is also watched where it lands when a reader wrongly
// resolves it against ptcd's working directory.
func probePath(e *env, name string, relative bool) (probes, string, error) {
	var ps probes
	add := func(path string) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		p, err := newFIFOProbe(path)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		return nil
	}
	abs := filepath.Join(e.dir, name+".fifo")
	var path string
	switch {
	case relative && e.srv.mode == inprocess:
		abs = filepath.Join(e.srv.dir, name+".fifo")
		path = name + ".fifo"
	case relative:
		path = strings.TrimPrefix(abs, "/")
	default:
		path = abs
		if e.srv.mode == inprocess {
			if err := add(filepath.Join(e.srv.dir, abs)); err != nil {
				return nil, "", err
			}
		}
	}
	if err := add(abs); err != nil {
		ps.stop()
		return nil, "", err
	}
	return ps, path, nil
}
