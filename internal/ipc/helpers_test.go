package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pipes returns two raw pipes (a→b and b→a) as descriptors.
func pipes(tb testing.TB) (aR, aW, bR, bW int) {
	tb.Helper()
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	return ba[0], ab[1], ab[0], ba[1]
}

// connPair returns two connected Conns in this process, closed at the
// end of the test.
func connPair(tb testing.TB, a, b Options) (*Conn, *Conn) {
	tb.Helper()
	aR, aW, bR, bW := pipes(tb)
	ca, err := New(aR, aW, a)
	if err != nil {
		tb.Fatal(err)
	}
	cb, err := New(bR, bW, b)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = ca.Close()
		_ = cb.Close()
	})
	return ca, cb
}

// serve runs c.Serve on a goroutine and returns a channel with its result.
func serve(c *Conn) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Serve() }()
	return ch
}

// echoHandler answers every frame with the same tag and payload.
func echoHandler(c **Conn) func(uint64, []byte) error {
	return func(tag uint64, p []byte) error { return (*c).Send(tag, p) }
}

// pattern returns n bytes that depend on seed, to detect corruption.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// call sends payload under tag on c and waits for the answer in m.
func call(ctx context.Context, c *Conn, m *Mailbox, tag uint64, payload []byte) ([]byte, error) {
	if err := c.Send(tag, payload); err != nil {
		return nil, err
	}
	var got []byte
	err := m.Next(ctx, func(p []byte) error {
		got = append([]byte(nil), p...)
		return nil
	})
	return got, err
}

func checkEqual(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("payload of %d bytes came back as %d bytes (first difference at %d)", len(want), len(got), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// childEcho is the child program "echo": it answers every frame with the
// same tag and payload until the parent goes away, then exits 0 (1 on any
// other error). Its connection is descriptors 3 (read) and 4 (write).
func childEcho() int {
	var c *Conn
	c, err := New(3, 4, Options{Handler: echoHandler(&c)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 2
	}
	defer c.Close()
	if err := c.Serve(); !errors.Is(err, ErrPeerClosed) {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 1
	}
	return 0
}

// childEchoSocket is the child program "echo-socket": as "echo", over a
// stream socket (descriptor 3) instead of two pipes.
func childEchoSocket() int {
	var c *Conn
	c, err := New(3, 3, Options{Handler: echoHandler(&c)})
	if err != nil {
		return 2
	}
	defer c.Close()
	if err := c.Serve(); !errors.Is(err, ErrPeerClosed) {
		fmt.Fprintln(os.Stderr, "echo-socket child:", err)
		return 1
	}
	return 0
}

// childEchoQueued is the child program "echo-queued": as "echo", but the
// answers to the frames of one read are queued and written together.
func childEchoQueued() int {
	var c *Conn
	c, err := New(3, 4, Options{Handler: func(tag uint64, p []byte) error { return c.Queue(tag, p) }})
	if err != nil {
		return 2
	}
	defer c.Close()
	if err := c.Serve(); !errors.Is(err, ErrPeerClosed) {
		fmt.Fprintln(os.Stderr, "echo-queued child:", err)
		return 1
	}
	return 0
}

// childWait is the child program "wait": it reads nothing and waits until
// it is killed.
func childWait() int {
	for {
		time.Sleep(time.Hour)
	}
}

// childCaller is the child program "caller": the worker's side of a
// round trip. A locked goroutine sends a frame under tag 1 and waits for
// the answer in its mailbox, again and again, with Serve reading in the
// background; it exits 0 once the parent goes away.
func childCaller() int {
	c, err := New(3, 4, Options{})
	if err != nil {
		return 2
	}
	defer c.Close()
	served := serve(c)
	m, err := c.Mailbox(1)
	if err != nil {
		return 2
	}
	runtime.LockOSThread()
	payload := []byte("ping")
	for {
		if _, err := call(context.Background(), c, m, 1, payload); err != nil {
			_ = c.Close()
			<-served
			if errors.Is(err, ErrPeerClosed) {
				return 0
			}
			return 1
		}
	}
}

// startPeer starts child program name connected to a new parent Conn
// with options opt.
func startPeer(tb testing.TB, name string, opt Options) (*Conn, *child) {
	tb.Helper()
	c, r, w, err := NewParent(opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, startChild(tb, name, r, w)
}

// childEchoMailbox is the child program "echo-mailbox": it answers each
// frame of tag 1 as the supervisor answers a worker's tool calls, from a
// goroutine that waits for the frame in Mailbox.Next and then sends the
// answer itself. "echo-mailbox-nospin" never spins (Options.SpinBudget),
// "echo-mailbox-noprobe" spins whatever the host's load.
func childEchoMailbox(opt Options) int {
	c, err := New(3, 4, opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-mailbox child:", err)
		return 2
	}
	defer c.Close()
	m, err := c.Mailbox(1)
	if err != nil {
		return 2
	}
	var v [8]byte
	for {
		err := m.Next(context.Background(), func(p []byte) error { copy(v[:], p); return nil })
		if errors.Is(err, ErrPeerClosed) {
			return 0
		}
		if err == nil {
			err = c.Send(1, v[:])
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "echo-mailbox child:", err)
			return 1
		}
	}
}
