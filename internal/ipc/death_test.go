package ipc

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func TestPeerDeath(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		c, ch := startPeer(t, "wait", Options{})
		served := serve(c)
		ch.kill()
		if err := <-served; !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Serve after the child was killed: %v, want ErrPeerClosed", err)
		}
		if err := c.Send(1, []byte("x")); !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Send after the child was killed: %v, want ErrPeerClosed", err)
		}
	})
	t.Run("mailbox", func(t *testing.T) {
		c, ch := startPeer(t, "wait", Options{})
		m, _ := c.Mailbox(1)
		errc := make(chan error, 1)
		go func() { errc <- m.Next(context.Background(), func([]byte) error { return nil }) }()
		ch.kill()
		if err := <-errc; !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Next after the child was killed: %v, want ErrPeerClosed", err)
		}
	})
	t.Run("blocked writer", func(t *testing.T) {
		// The child never reads: a large frame fills the pipe and the
		// writer waits for room until the child dies.
		c, ch := startPeer(t, "wait", Options{WriteTimeout: -1})
		errc := make(chan error, 1)
		go func() { errc <- c.Send(1, make([]byte, 4<<20)) }()
		waitBlocked(t, c)
		ch.kill()
		if err := <-errc; !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("Send to a child that was killed: %v, want ErrPeerClosed", err)
		}
	})
	t.Run("parent", func(t *testing.T) {
		// The child serves; the parent closes its end (as a dying
		// supervisor's descriptors are closed): the child's Serve
		// returns ErrPeerClosed and it exits 0.
		c, ch := startPeer(t, "echo", Options{})
		m, _ := c.Mailbox(1)
		if _, err := call(context.Background(), c, m, 1, []byte("x")); err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
		if err := ch.wait(); err != nil {
			t.Fatalf("the child after its parent went away: %v, want exit 0", err)
		}
	})
}

// waitBlocked waits until a goroutine is writing to c (with a peer that
// does not read, it then waits for room).
func waitBlocked(t *testing.T, c *Conn) {
	t.Helper()
	for {
		c.mu.Lock()
		writing := c.flushing
		c.mu.Unlock()
		if writing {
			return
		}
		runtime.Gosched()
	}
}

func TestCloseUnblocks(t *testing.T) {
	c, _ := startPeer(t, "wait", Options{WriteTimeout: -1})
	served := serve(c)
	m, _ := c.Mailbox(1)
	next := make(chan error, 1)
	go func() { next <- m.Next(context.Background(), func([]byte) error { return nil }) }()
	m2, _ := c.Mailbox(2)
	next2 := make(chan error, 1)
	go func() { next2 <- m2.Next(context.Background(), func([]byte) error { return nil }) }()
	sent := make(chan error, 1)
	go func() { sent <- c.Send(1, make([]byte, 4<<20)) }()
	waitBlocked(t, c)
	_ = c.Close()
	for name, ch := range map[string]<-chan error{"Serve": served, "Next": next, "second Next": next2, "Send": sent} {
		if err := <-ch; !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
