package ipc

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// TestNoLeaks opens and closes connections with a goroutine in Serve, one
// waiting in Next and one blocked writing to a peer that does not read,
// and checks that every goroutine ends and every descriptor is closed.
func TestNoLeaks(t *testing.T) {
	before := openFDs(t)
	for range 20 {
		a, b := connPair(t, Options{WriteTimeout: -1}, Options{})
		var wg sync.WaitGroup
		wg.Add(4)
		go func() { defer wg.Done(); _ = a.Serve() }()
		go func() { defer wg.Done(); _ = b.Serve() }()
		m, _ := a.Mailbox(1)
		go func() { defer wg.Done(); _ = m.Next(context.Background(), func([]byte) error { return nil }) }()
		// b's Serve reads, so fill the pipe from b to a instead: a reads
		// only for the mailbox, which wants another tag.
		go func() {
			defer wg.Done()
			for {
				if err := b.Send(2, make([]byte, 1<<20)); err != nil {
					return
				}
			}
		}()
		waitBlocked(t, b)
		_ = a.Close()
		_ = b.Close()
		wg.Wait()
	}
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
	goleak.VerifyNone(t)
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// TestLeaderHandsFramesToHandler checks that a mailbox reading the
// connection (with no Serve running) hands frames of other tags to the
// Handler on the way, and writes what the Handler queued.
func TestLeaderHandsFramesToHandler(t *testing.T) {
	var a *Conn
	var handled []uint64
	a, b := connPair(t, Options{Handler: func(tag uint64, p []byte) error {
		handled = append(handled, tag)
		return a.Queue(tag, p)
	}}, Options{})
	m, _ := a.Mailbox(1)
	answers, _ := b.Mailbox(99)
	for _, tag := range []uint64{99, 1} {
		if err := b.Send(tag, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Next(context.Background(), func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(handled) != 1 || handled[0] != 99 {
		t.Fatalf("handler saw %v, want [99]", handled)
	}
	if err := answers.Next(context.Background(), func(p []byte) error {
		if string(p) != "x" {
			return errors.New("wrong answer")
		}
		return nil
	}); err != nil {
		t.Fatalf("the answer the handler queued: %v", err)
	}
}

// TestSocketGivenTwice runs a connection over one stream socket used for
// both directions, and checks it is closed once.
func TestSocketGivenTwice(t *testing.T) {
	before := openFDs(t)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd, peerFD := fds[0], fds[1]
	var b *Conn
	a, err := New(fd, fd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err = New(peerFD, peerFD, Options{Handler: echoHandler(&b)})
	if err != nil {
		t.Fatal(err)
	}
	served := serve(b)
	m, _ := a.Mailbox(1)
	got, err := call(context.Background(), a, m, 1, []byte("over a socket"))
	if err != nil || string(got) != "over a socket" {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	_ = a.Close()
	if err := <-served; !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Serve after the peer closed: %v", err)
	}
	_ = b.Close()
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
}
