package ipc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/encoding/protowire"
)

// BenchmarkRoundTrip measures one frame there and back between this
// process, in the role of a worker whose script awaits a tool call, and a
// re-executed child in the role of the supervisor answering at once. Each
// op is one round trip of a 64-byte payload; "p50-ns" is the median.
//
//   - wait=mailbox: the waiting goroutine sends and then reads the
//     connection itself (Mailbox.Next) while Serve stands by; the child
//     answers from its Serve thread (Handler → Send). No hand-off between
//     goroutines on either side.
//   - peer=mailbox: the child answers as the supervisor does, from a
//     goroutine that waits for each frame in Mailbox.Next and sends the
//     answer itself, so both sides wait in Mailbox.Next; spin=on spins
//     before blocking as configured by default (Options.SpinBudget),
//     spin=off never spins, spin=on-whatever-load spins even when the
//     host has more runnable threads than CPUs (what the spin would gain
//     were the host idle, measured on a loaded one).
//   - transport=ipc-socket: the same over a Unix socket pair instead of
//     two pipes.
//   - wait=handoff: Serve reads and hands the frame to the waiting
//     goroutine over a channel (a dedicated reader thread);
//     wait=handoff-yield: the Handler then yields (runtime.Gosched), so
//     an unlocked waiter runs on the reader's thread before it polls
//     again, instead of on a thread woken for it.
//   - transport=netpoller: today's worker structure, for comparison: a
//     socket pair through the netpoller with length-delimited frames; the
//     waiter starts a goroutine that waits for the reply, a reader
//     goroutine routes the reply to it, and it forwards it to the waiter;
//     the child's reader starts a goroutine per frame to answer.
//
// vm=locked runs the waiter locked to its OS thread, as the worker's VM
// goroutine is (for its CPU clock).
func BenchmarkRoundTrip(b *testing.B) {
	payload := make([]byte, 64)
	for _, locked := range []bool{true, false} {
		vm := "vm=locked"
		if !locked {
			vm = "vm=unlocked"
		}
		b.Run("transport=ipc/wait=mailbox/"+vm, func(b *testing.B) {
			c, _ := startPeer(b, "echo", Options{})
			served := serve(c)
			defer func() { _ = c.Close(); <-served }()
			m, err := c.Mailbox(1)
			if err != nil {
				b.Fatal(err)
			}
			lockIf(locked, func() {
				ctx := context.Background()
				benchRoundTrips(b, func(v uint64) uint64 {
					binary.LittleEndian.PutUint64(payload, v)
					if err := c.Send(1, payload); err != nil {
						b.Fatal(err)
					}
					var got uint64
					if err := m.Next(ctx, func(p []byte) error { got = binary.LittleEndian.Uint64(p); return nil }); err != nil {
						b.Fatal(err)
					}
					return got
				})
			})
		})
		for _, sp := range []struct {
			name, child string
			opt         Options
		}{
			{"spin=on", "echo-mailbox", Options{}},
			{"spin=off", "echo-mailbox-nospin", Options{SpinBudget: -1}},
			{"spin=on-whatever-load", "echo-mailbox-noprobe", Options{loadavg: "-"}},
		} {
			opt, child := sp.opt, sp.child
			b.Run("transport=ipc/wait=mailbox/peer=mailbox/"+sp.name+"/"+vm, func(b *testing.B) {
				c, _ := startPeer(b, child, opt)
				m, err := c.Mailbox(1)
				if err != nil {
					b.Fatal(err)
				}
				lockIf(locked, func() {
					ctx := context.Background()
					benchRoundTrips(b, func(v uint64) uint64 {
						binary.LittleEndian.PutUint64(payload, v)
						if err := c.Send(1, payload); err != nil {
							b.Fatal(err)
						}
						var got uint64
						if err := m.Next(ctx, func(p []byte) error { got = binary.LittleEndian.Uint64(p); return nil }); err != nil {
							b.Fatal(err)
						}
						return got
					})
				})
			})
		}
		b.Run("transport=ipc-socket/wait=mailbox/"+vm, func(b *testing.B) {
			fd, cf := socketpair(b)
			c, err := New(fd, fd, Options{})
			if err != nil {
				b.Fatal(err)
			}
			startChild(b, "echo-socket", cf)
			served := serve(c)
			defer func() { _ = c.Close(); <-served }()
			m, err := c.Mailbox(1)
			if err != nil {
				b.Fatal(err)
			}
			lockIf(locked, func() {
				ctx := context.Background()
				benchRoundTrips(b, func(v uint64) uint64 {
					binary.LittleEndian.PutUint64(payload, v)
					if err := c.Send(1, payload); err != nil {
						b.Fatal(err)
					}
					var got uint64
					if err := m.Next(ctx, func(p []byte) error { got = binary.LittleEndian.Uint64(p); return nil }); err != nil {
						b.Fatal(err)
					}
					return got
				})
			})
		})
		for _, yield := range []bool{false, true} {
			wait := "wait=handoff"
			if yield {
				wait = "wait=handoff-yield"
			}
			b.Run("transport=ipc/"+wait+"/"+vm, func(b *testing.B) {
				replies := make(chan uint64, 1)
				c, _ := startPeer(b, "echo", Options{Handler: func(_ uint64, p []byte) error {
					replies <- binary.LittleEndian.Uint64(p)
					if yield {
						runtime.Gosched()
					}
					return nil
				}})
				served := serve(c)
				defer func() { _ = c.Close(); <-served }()
				lockIf(locked, func() {
					benchRoundTrips(b, func(v uint64) uint64 {
						binary.LittleEndian.PutUint64(payload, v)
						if err := c.Send(1, payload); err != nil {
							b.Fatal(err)
						}
						return <-replies
					})
				})
			})
		}
		b.Run("transport=netpoller/"+vm, func(b *testing.B) {
			fd, cf := socketpair(b)
			f := os.NewFile(uintptr(fd), "parent")
			conn, err := net.FileConn(f)
			_ = f.Close()
			if err != nil {
				b.Fatal(err)
			}
			startChild(b, "netpoller-answer", cf)
			w := newDelimWriter(conn)
			replies := make(chan chan []byte, 1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the reader: routes each reply to its waiter
				defer wg.Done()
				r := bufio.NewReaderSize(conn, 64<<10)
				for {
					p, err := readDelim(r)
					if err != nil {
						return
					}
					(<-replies) <- p
				}
			}()
			defer func() { _ = conn.Close(); wg.Wait() }()
			done := make(chan []byte, 16)
			lockIf(locked, func() {
				benchRoundTrips(b, func(v uint64) uint64 {
					binary.LittleEndian.PutUint64(payload, v)
					ch := make(chan []byte, 1)
					replies <- ch
					if err := w.write(payload); err != nil {
						b.Fatal(err)
					}
					go func() { done <- <-ch }() // the call's goroutine
					return binary.LittleEndian.Uint64(<-done)
				})
			})
		})
	}
}

// BenchmarkBatch measures 20 calls started together and their 20 replies
// (as Promise.all over 20 tool calls), per op: the calls queued and
// written in one system call (Queue, Flush) or one Send each; the child
// answers each frame with a Send of its own (answer=send) or queues its
// answers to the frames of one read and writes them together
// (answer=queued).
func BenchmarkBatch(b *testing.B) {
	const calls = 20
	for _, tc := range []struct {
		name    string
		batched bool
		child   string
	}{
		{"send=batched/answer=queued", true, "echo-queued"},
		{"send=batched/answer=send", true, "echo"},
		{"send=one-by-one/answer=send", false, "echo"},
	} {
		batched := tc.batched
		b.Run(tc.name, func(b *testing.B) {
			c, _ := startPeer(b, tc.child, Options{})
			served := serve(c)
			defer func() { _ = c.Close(); <-served }()
			m, _ := c.Mailbox(1)
			payload := make([]byte, 64)
			ctx := context.Background()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				for range calls {
					var err error
					if batched {
						err = c.Queue(1, payload)
					} else {
						err = c.Send(1, payload)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := c.Flush(); err != nil {
					b.Fatal(err)
				}
				for range calls {
					if err := m.Next(ctx, func([]byte) error { return nil }); err != nil {
						b.Fatal(err)
					}
				}
				ds = append(ds, time.Since(start))
			}
			b.StopTimer()
			reportMedian(b, ds)
		})
	}
}

// BenchmarkLargeFrame measures a 1 MiB frame there and back.
func BenchmarkLargeFrame(b *testing.B) {
	c, _ := startPeer(b, "echo", Options{})
	served := serve(c)
	defer func() { _ = c.Close(); <-served }()
	m, _ := c.Mailbox(1)
	payload := pattern(1, 1<<20)
	b.SetBytes(2 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Send(1, payload); err != nil {
			b.Fatal(err)
		}
		if err := m.Next(context.Background(), func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func lockIf(lock bool, f func()) {
	if lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	f()
}

// delimWriter writes varint-length-delimited frames through a buffered
// writer under a mutex, as the worker's frame writer does.
type delimWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newDelimWriter(w io.Writer) *delimWriter { return &delimWriter{w: bufio.NewWriterSize(w, 64<<10)} }

func (d *delimWriter) write(p []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var hdr [binary.MaxVarintLen64]byte
	if _, err := d.w.Write(protowire.AppendVarint(hdr[:0], uint64(len(p)))); err != nil {
		return err
	}
	if _, err := d.w.Write(p); err != nil {
		return err
	}
	return d.w.Flush()
}

func readDelim(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 1<<20 {
		return nil, errors.New("frame too large")
	}
	p := make([]byte, n)
	_, err = io.ReadFull(r, p)
	return p, err
}

// childNetpollerAnswer is the child program "netpoller-answer": the
// supervisor's side as the worker pool has it today. A reader goroutine
// reads frames through the netpoller and starts a goroutine per frame,
// which writes the answer.
func childNetpollerAnswer() int {
	f := os.NewFile(3, "socket")
	conn, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return 2
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	w := newDelimWriter(conn)
	for {
		p, err := readDelim(r)
		if err != nil {
			return 0
		}
		go func() { _ = w.write(p) }()
	}
}

// BenchmarkSpinTry measures one try of a spinning reader on an empty
// pipe: a non-blocking read(2) (what the spin does), a poll(2) with no
// timeout (which a read would still have to follow), a read followed by
// sched_yield(2), and the load of an atomic flag (what a spin on shared
// memory would do, for scale).
func BenchmarkSpinTry(b *testing.B) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		b.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	buf := make([]byte, 64<<10)
	b.Run("op=read", func(b *testing.B) {
		for range b.N {
			if _, err := unix.Read(p[0], buf); err != unix.EAGAIN {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=poll0", func(b *testing.B) {
		fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
		for range b.N {
			if n, err := unix.Poll(fds, 0); err != unix.EINTR && (n != 0 || err != nil) {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("op=read+yield", func(b *testing.B) {
		for range b.N {
			if _, err := unix.Read(p[0], buf); err != unix.EAGAIN {
				b.Fatal(err)
			}
			_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	})
	b.Run("op=atomic", func(b *testing.B) {
		var flag atomic.Bool
		for range b.N {
			if flag.Load() {
				b.Fatal("set")
			}
		}
	})
}
