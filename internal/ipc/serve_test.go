package ipc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestServeBackoff checks the growth of Serve's step back and its bound.
func TestServeBackoff(t *testing.T) {
	for _, c := range []struct {
		last, want time.Duration
	}{
		{0, serveBackoffMin},
		{serveBackoffMin, 2 * serveBackoffMin},
		{2 * serveBackoffMin, 4 * serveBackoffMin},
		{serveBackoffMax / 2, serveBackoffMax},
		{serveBackoffMax, serveBackoffMax},
		{10 * serveBackoffMax, serveBackoffMax},
	} {
		if got := nextServeBackoff(c.last); got != c.want {
			t.Errorf("after %v: %v, want %v", c.last, got, c.want)
		}
	}
}

// TestServeAfterSteppingBack checks that Serve, having stepped back
// again and again while a mailbox exchanged frames (up to
// serveBackoffMax), still reads the frames nobody waits for in a mailbox
// once the mailbox stops: each goes to the Handler; and that Close ends
// it.
func TestServeAfterSteppingBack(t *testing.T) {
	const rounds, strays = 2000, 5
	var b *Conn
	got := make(chan []byte, strays)
	a, b0 := connPair(t, Options{Handler: func(tag uint64, p []byte) error {
		got <- append([]byte(nil), p...)
		return nil
	}}, Options{Handler: echoHandler(&b)})
	b = b0
	serve(b)
	served := serve(a)
	m, err := a.Mailbox(1)
	if err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		want := pattern(r, 16)
		p, err := call(context.Background(), a, m, 1, want)
		if err != nil {
			t.Fatal(err)
		}
		checkEqual(t, p, want)
	}
	m.Close()
	// Tag 2 has no mailbox: b echoes it, and a's Serve hands it to the
	// Handler.
	for i := range strays {
		if err := a.Send(2, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if p := <-got; len(p) != 1 || p[0] != byte(i) {
			t.Fatalf("stray %d: got %v", i, p)
		}
	}
	_ = a.Close()
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve after Close: %v, want ErrClosed", err)
	}
}
