package wasm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// echoModule returns a module with minPages of memory whose _start reads
// once from stdin (at most 64 bytes), writes what it read to stdout and
// then runs extra.
func echoModule(minPages uint32, extra ...[]byte) []byte {
	var b modBuilder
	fdRead := b.importFunc("wasi_snapshot_preview1", "fd_read", []byte{i32, i32, i32, i32}, []byte{i32})
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	b.mem(minPages)
	// iovec at 0: {ptr 64, len 64}; the count read or written at 8.
	b.dataAt(0, []byte{64, 0, 0, 0, 64, 0, 0, 0})
	load := []byte{0x28, 0x02, 0x00}
	store := []byte{0x36, 0x02, 0x00}
	body := [][]byte{
		i32c(0), i32c(0), i32c(1), i32c(8), call(fdRead), opDrop,
		// iovec.len = what was read
		i32c(4), i32c(8), load, store,
		i32c(1), i32c(0), i32c(1), i32c(8), call(fdWrite), opDrop,
	}
	body = append(body, extra...)
	start := b.function(nil, nil, body...)
	b.export("_start", 0x00, start)
	return b.bytes()
}

// jobStdin is a stdin that gives the guest its job once the job is handed
// over (give), and the end of the stream when the instance ends.
type jobStdin struct {
	ctx context.Context
	job chan []byte
	// waiting is closed when the guest first reads: its start is done.
	waiting chan struct{}
	once    sync.Once
}

func (r *jobStdin) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.waiting) })
	select {
	case b := <-r.job:
		return copy(p, b), nil
	case <-r.ctx.Done():
		return 0, io.EOF
	}
}

// TestStarted runs jobs on instances started ahead of them: the job's
// stdin, limits and classification apply from Run on, an instance runs
// one job, and Close ends one that runs none.
func TestStarted(t *testing.T) {
	e := newEngine(t)
	cases := []struct {
		name   string
		module []byte
		lim    limits.Limits
		cancel bool
		close  bool
		kind   fault.Kind
		out    string
	}{
		{name: "job", module: echoModule(1), out: "job"},
		{name: "timeout", module: echoModule(1, opLoopForever), lim: limits.Limits{Timeout: 100 * time.Millisecond}, kind: fault.KindTimeout},
		{name: "cpu", module: echoModule(1, opLoopForever), lim: limits.Limits{CPUTime: 100 * time.Millisecond, Timeout: time.Minute}, kind: fault.KindCPULimit},
		{name: "memory held over the job's limit", module: echoModule(4), lim: limits.Limits{MemoryBytes: pageSize}, kind: fault.KindMemoryLimit},
		{name: "cancelled by the caller", module: echoModule(1, opLoopForever), cancel: true, kind: fault.KindCancelled},
		{name: "trap", module: echoModule(1, opUnreachable), kind: fault.KindScript, out: "job"},
		{name: "closed before its job", module: echoModule(1), close: true, kind: fault.KindInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hash, err := e.Compile(context.Background(), c.module)
			if err != nil {
				t.Fatal(err)
			}
			var stdout bytes.Buffer
			in := &jobStdin{job: make(chan []byte, 1), waiting: make(chan struct{})}
			s, err := e.StartStreams(hash, []string{"guest"}, func(ctx context.Context, _ Meter) (io.Reader, io.Writer) {
				in.ctx = ctx
				return in, &stdout
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-in.waiting:
			case <-s.Done():
				t.Fatal("the guest ended before it read its stdin")
			}
			if fits := s.Fits(c.lim.MemoryBytes); fits != (c.kind != fault.KindMemoryLimit) {
				t.Fatalf("Fits = %v", fits)
			}
			if c.close {
				s.Close()
				<-s.Done()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			j, _ := job(nil, "", c.lim, nil)
			out := s.Run(ctx, j, func() {
				in.job <- []byte("job")
				if c.cancel {
					cancel()
				}
			})
			if c.kind == 0 && out.Err != nil {
				t.Fatal(out.Err)
			}
			if c.kind != 0 && (out.Err == nil || out.Err.Kind != c.kind) {
				t.Fatalf("err = %v, want %v", out.Err, c.kind)
			}
			if c.out != "" && stdout.String() != c.out {
				t.Fatalf("stdout %q, want %q", stdout.String(), c.out)
			}
			if again := s.Run(context.Background(), j, func() {}); again.Err == nil || again.Err.Kind != fault.KindInternal {
				t.Fatalf("a second Run: %v", again.Err)
			}
			s.Close()
		})
	}
}

// TestStartStreamsUnknownModule: only a compiled module can be started.
func TestStartStreamsUnknownModule(t *testing.T) {
	e := newEngine(t)
	if _, err := e.StartStreams("00", nil, nil, nil); !errors.Is(err, ErrUnknownModule) {
		t.Fatalf("err = %v, want ErrUnknownModule", err)
	}
}
