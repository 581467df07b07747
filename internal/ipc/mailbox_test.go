package ipc

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

func TestMailboxes(t *testing.T) {
	t.Run("many waiters", func(t *testing.T) {
		const boxes, rounds = 6, 200
		var b *Conn
		a, b0 := connPair(t, Options{}, Options{Handler: echoHandler(&b)})
		b = b0
		serve(b)
		serve(a)
		var wg sync.WaitGroup
		for i := range boxes {
			m, err := a.Mailbox(uint64(i + 1))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					want := pattern(i*rounds+r, sizeFor(r))
					got, err := call(context.Background(), a, m, uint64(i+1), want)
					if err != nil {
						t.Error(err)
						return
					}
					if string(got) != string(want) {
						t.Errorf("mailbox %d round %d: wrong payload", i, r)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	t.Run("frames kept until asked for", func(t *testing.T) {
		var b *Conn
		a, b0 := connPair(t, Options{}, Options{Handler: echoHandler(&b)})
		b = b0
		serve(b)
		m, _ := a.Mailbox(5)
		other, _ := a.Mailbox(6)
		for i := range 3 {
			if err := a.Send(5, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := call(context.Background(), a, other, 6, []byte("x")); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			var got []byte
			if err := m.Next(context.Background(), func(p []byte) error { got = append(got, p...); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != byte(i) {
				t.Fatalf("frame %d came back as %v", i, got)
			}
		}
	})
	t.Run("context ends while leading", func(t *testing.T) {
		var b *Conn
		release := make(chan struct{})
		a, b0 := connPair(t, Options{}, Options{Handler: func(tag uint64, p []byte) error {
			go func() {
				<-release
				_ = b.Send(tag, p)
			}()
			return nil
		}})
		b = b0
		serve(b)
		m, _ := a.Mailbox(1)
		ctx, cancel := context.WithCancel(context.Background())
		if err := a.Send(1, []byte("late")); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- m.Next(ctx, func([]byte) error { return errors.New("no frame expected yet") }) }()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Next after its context ended: %v", err)
		}
		close(release)
		var got string
		if err := m.Next(context.Background(), func(p []byte) error { got = string(p); return nil }); err != nil || got != "late" {
			t.Fatalf("the late frame: %q, %v", got, err)
		}
	})
	t.Run("context ends while following", func(t *testing.T) {
		a, _ := connPair(t, Options{}, Options{})
		leader, _ := a.Mailbox(1)
		follower, _ := a.Mailbox(2)
		lctx, lcancel := context.WithCancel(context.Background())
		defer lcancel()
		lerr := make(chan error, 1)
		go func() { lerr <- leader.Next(lctx, func([]byte) error { return nil }) }()
		waitRole(t, a)
		fctx, fcancel := context.WithCancel(context.Background())
		ferr := make(chan error, 1)
		go func() { ferr <- follower.Next(fctx, func([]byte) error { return nil }) }()
		fcancel()
		if err := <-ferr; !errors.Is(err, context.Canceled) {
			t.Fatalf("follower: %v", err)
		}
		lcancel()
		if err := <-lerr; !errors.Is(err, context.Canceled) {
			t.Fatalf("leader: %v", err)
		}
	})
	t.Run("queued frames go out before a waiter blocks", func(t *testing.T) {
		// Whether the waiter leads (reads itself) or follows (another
		// goroutine holds the reading role), what it queued is written
		// before it waits: the answer it waits for may depend on it.
		for _, follow := range []bool{false, true} {
			var b *Conn
			a, b0 := connPair(t, Options{}, Options{Handler: echoHandler(&b)})
			b = b0
			serve(b)
			m, _ := a.Mailbox(1)
			if follow {
				other, _ := a.Mailbox(2)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { _ = other.Next(ctx, func([]byte) error { return nil }) }()
				waitRole(t, a)
			}
			if err := a.Queue(1, []byte("queued")); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := m.Next(context.Background(), func(p []byte) error { got = string(p); return nil }); err != nil || got != "queued" {
				t.Fatalf("follow=%v: %q, %v", follow, got, err)
			}
		}
	})
	t.Run("a frame already here is taken without writing", func(t *testing.T) {
		a, b := connPair(t, Options{}, Options{})
		m, _ := a.Mailbox(1)
		// Two frames in one write: the first Next reads both and keeps
		// the second in the mailbox.
		for i := range 2 {
			if err := b.Queue(1, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := m.Next(context.Background(), func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := a.Queue(1, []byte("answer")); err != nil {
			t.Fatal(err)
		}
		if err := m.Next(context.Background(), func([]byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
		a.mu.Lock()
		queued := len(a.pending)
		a.mu.Unlock()
		if queued == 0 {
			t.Fatal("the queued answer was written although a frame was waiting")
		}
		bm, _ := b.Mailbox(1)
		next := make(chan string, 1)
		go func() {
			var got string
			_ = bm.Next(context.Background(), func(p []byte) error { got = string(p); return nil })
			next <- got
		}()
		// a now waits: its queued answer goes out first.
		ctx, cancel := context.WithCancel(context.Background())
		waited := make(chan error, 1)
		go func() { waited <- m.Next(ctx, func([]byte) error { return nil }) }()
		if got := <-next; got != "answer" {
			t.Fatalf("the peer got %q", got)
		}
		cancel()
		<-waited
	})
	t.Run("errors", func(t *testing.T) {
		a, _ := connPair(t, Options{}, Options{})
		m, _ := a.Mailbox(1)
		if _, err := a.Mailbox(1); !errors.Is(err, ErrTagInUse) {
			t.Fatalf("second mailbox for a tag: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- m.Next(ctx, func([]byte) error { return nil }) }()
		waitRole(t, a)
		if err := m.Next(context.Background(), func([]byte) error { return nil }); !errors.Is(err, ErrMailboxBusy) {
			t.Fatalf("concurrent Next: %v", err)
		}
		cancel()
		<-errc
		m.Close()
		if err := m.Next(context.Background(), func([]byte) error { return nil }); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next on a closed mailbox: %v", err)
		}
		if _, err := a.Mailbox(1); err != nil {
			t.Fatalf("mailbox for a freed tag: %v", err)
		}
		_ = a.Close()
		if _, err := a.Mailbox(2); !errors.Is(err, ErrClosed) {
			t.Fatalf("Mailbox after Close: %v", err)
		}
	})
}

// waitRole waits until a goroutine holds c's reading role.
func waitRole(t *testing.T, c *Conn) {
	t.Helper()
	for {
		c.mu.Lock()
		r := c.reading
		c.mu.Unlock()
		if r {
			return
		}
		runtime.Gosched()
	}
}

func TestHandlerError(t *testing.T) {
	bad := errors.New("protocol violation")
	a, b := connPair(t, Options{}, Options{Handler: func(tag uint64, p []byte) error {
		if tag == 2 {
			return bad
		}
		return nil
	}})
	m, _ := b.Mailbox(1)
	next := make(chan error, 1)
	go func() { next <- m.Next(context.Background(), func([]byte) error { return nil }) }()
	served := serve(b)
	if err := a.Send(2, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, bad) {
		t.Fatalf("Serve: %v", err)
	}
	if err := <-next; !errors.Is(err, bad) {
		t.Fatalf("Next: %v", err)
	}
}
