package ipc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		opt  Options
	}{
		{"empty", 0, Options{}},
		{"one byte", 1, Options{}},
		{"small", 200, Options{}},
		{"below direct write", directMin - 1, Options{}},
		{"direct write", directMin, Options{}},
		{"fills the read buffer", 64<<10 - HeaderBytes, Options{}},
		{"one byte more than the read buffer", 64<<10 - HeaderBytes + 1, Options{}},
		{"1 MiB", 1 << 20, Options{}},
		{"20 MiB", 20 << 20, Options{}},
		{"at the limit", 3 << 20, Options{MaxFrameBytes: 3 << 20}},
		{"tiny read buffer", 10 << 10, Options{ReadBufferBytes: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b *Conn
			bo := tc.opt
			bo.Handler = echoHandler(&b)
			a, b0 := connPair(t, tc.opt, bo)
			b = b0
			served := serve(b)
			m, err := a.Mailbox(7)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				want := pattern(i, tc.size)
				got, err := call(context.Background(), a, m, 7, want)
				if err != nil {
					t.Fatal(err)
				}
				checkEqual(t, got, want)
			}
			_ = a.Close()
			if err := <-served; !errors.Is(err, ErrPeerClosed) {
				t.Fatalf("Serve after the peer closed: %v, want ErrPeerClosed", err)
			}
		})
	}
}

// TestRoundTripChild runs round trips with a child process of every size
// class, both ways: the child answers (echo), or the child calls and this
// side answers (caller).
func TestRoundTripChild(t *testing.T) {
	t.Run("child answers", func(t *testing.T) {
		c, ch := startPeer(t, "echo", Options{})
		served := serve(c)
		m, err := c.Mailbox(3)
		if err != nil {
			t.Fatal(err)
		}
		for i, size := range []int{0, 10, 5000, 70 << 10, 8 << 20} {
			want := pattern(i, size)
			got, err := call(context.Background(), c, m, 3, want)
			if err != nil {
				t.Fatal(err)
			}
			checkEqual(t, got, want)
		}
		_ = c.Close()
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Fatalf("Serve after Close: %v", err)
		}
		if err := ch.wait(); err != nil {
			t.Fatalf("the child did not exit cleanly after the parent closed: %v", err)
		}
	})
	t.Run("child calls", func(t *testing.T) {
		var c *Conn
		n := 0
		done := make(chan struct{})
		c, ch := startPeer(t, "caller", Options{Handler: func(tag uint64, p []byte) error {
			if string(p) != "ping" || tag != 1 {
				return fmt.Errorf("unexpected frame %d %q", tag, p)
			}
			if n++; n == 1000 {
				close(done)
			}
			return c.Send(tag, p)
		}})
		served := serve(c)
		<-done
		_ = c.Close()
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Fatalf("Serve after Close: %v", err)
		}
		if err := ch.wait(); err != nil {
			t.Fatalf("the child did not exit cleanly after the parent closed: %v", err)
		}
	})
}

func TestOversizedFrameRefusedOnSend(t *testing.T) {
	var b *Conn
	a, b0 := connPair(t, Options{MaxFrameBytes: 1000}, Options{Handler: echoHandler(&b)})
	b = b0
	serve(b)
	for _, send := range []func([]byte) error{
		func(p []byte) error { return a.Send(1, p) },
		func(p []byte) error { return a.Queue(1, p) },
	} {
		var tl *FrameTooLargeError
		if err := send(make([]byte, 1001)); !errors.As(err, &tl) || tl.Size != 1001 || tl.Max != 1000 {
			t.Fatalf("oversized send: %v, want a FrameTooLargeError of 1001 > 1000", err)
		}
	}
	// The connection still works.
	m, _ := a.Mailbox(1)
	got, err := call(context.Background(), a, m, 1, []byte("ok"))
	if err != nil || string(got) != "ok" {
		t.Fatalf("after a refused frame: %q, %v", got, err)
	}
}

// rawFrames writes bytes straight to the pipe a Conn reads, as a hostile
// peer would.
func rawConn(t *testing.T, opt Options) (*Conn, int) {
	t.Helper()
	aR, aW, bR, bW := pipes(t)
	c, err := New(aR, aW, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		_ = unix.Close(bR)
		_ = unix.Close(bW)
	})
	return c, bW
}

func TestOversizedFrameReceived(t *testing.T) {
	for _, tc := range []struct {
		name     string
		announce uint32
		max      int
	}{
		{"one byte over", 1001, 1000},
		{"4 GiB announced", ^uint32(0), 1000},
		{"over the default limit", DefaultMaxFrameBytes + 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handled int
			c, w := rawConn(t, Options{MaxFrameBytes: tc.max, Handler: func(uint64, []byte) error { handled++; return nil }})
			m, _ := c.Mailbox(9)
			if err := writeFull(w, appendHeader(nil, 1, int(tc.announce))); err != nil {
				t.Fatal(err)
			}
			var tl *FrameTooLargeError
			if err := c.Serve(); !errors.As(err, &tl) || tl.Size != int64(tc.announce) {
				t.Fatalf("Serve: %v, want a FrameTooLargeError of %d bytes", err, tc.announce)
			}
			if err := m.Next(context.Background(), func([]byte) error { return nil }); !errors.As(err, &tl) {
				t.Fatalf("Next after the violation: %v, want the same error", err)
			}
			if err := c.Send(1, nil); !errors.As(err, &tl) {
				t.Fatalf("Send after the violation: %v, want the same error", err)
			}
			if handled != 0 {
				t.Fatal("a frame reached the handler")
			}
		})
	}
}

// TestAnnouncedFrameNotAllocated checks that a peer announcing a large
// frame and sending little of it does not make this side allocate the
// announced size.
func TestAnnouncedFrameNotAllocated(t *testing.T) {
	c, w := rawConn(t, Options{Handler: func(uint64, []byte) error { return errors.New("no frame expected") }})
	hdr := appendHeader(nil, 1, 60<<20)
	if err := writeFull(w, append(hdr, make([]byte, 1000)...)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	served := serve(c)
	// Wait until the bytes are consumed: the pipe is then empty.
	for {
		n, err := unix.IoctlGetInt(w, unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		runtime.Gosched()
	}
	_ = c.Close()
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Fatalf("Serve: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Fatalf("a 60 MiB frame announced with 1,000 bytes sent made the reader allocate %d bytes", grew)
	}
}

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

func TestWriteTimeout(t *testing.T) {
	c, _ := startPeer(t, "wait", Options{WriteTimeout: 20 * time.Millisecond})
	err := c.Send(1, make([]byte, 4<<20))
	if !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("Send to a child that does not read: %v, want ErrWriteTimeout", err)
	}
	if err := c.Send(1, nil); !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("Send after the timeout: %v, want ErrWriteTimeout again", err)
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

func TestConcurrentWriters(t *testing.T) {
	const writers, frames = 8, 300
	var b *Conn
	got := make(chan error, 1)
	seen := map[uint64]int{}
	total := 0
	a, b0 := connPair(t, Options{MaxQueuedBytes: 64 << 10}, Options{Handler: func(tag uint64, p []byte) error {
		n := seen[tag]
		if want := pattern(int(tag)*frames+n, len(p)); string(p) != string(want) || len(p) != sizeFor(n) {
			return fmt.Errorf("frame %d of writer %d is corrupt", n, tag)
		}
		seen[tag] = n + 1
		if total++; total == writers*frames {
			got <- nil
		}
		return nil
	}})
	b = b0
	served := serve(b)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range frames {
				p := pattern(w*frames+n, sizeFor(n))
				var err error
				if n%3 == 0 {
					err = a.Queue(uint64(w), p)
					if err == nil {
						err = a.Flush()
					}
				} else {
					err = a.Send(uint64(w), p)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-got:
	case err := <-served:
		t.Fatal(err)
	}
	_ = b.Close()
	<-served
}

// sizeFor varies frame sizes across the direct-write threshold.
func sizeFor(n int) int { return []int{0, 17, 300, directMin, 9000, 70 << 10}[n%6] }

func TestBatch(t *testing.T) {
	var b *Conn
	var order []uint64
	done := make(chan struct{})
	a, b0 := connPair(t, Options{}, Options{Handler: func(tag uint64, p []byte) error {
		order = append(order, tag)
		if len(order) == 20 {
			close(done)
		}
		return nil
	}})
	b = b0
	served := serve(b)
	for i := range 20 {
		if err := a.Queue(uint64(i), []byte("call")); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	<-done
	for i, tag := range order {
		if tag != uint64(i) {
			t.Fatalf("frames out of order: %v", order)
		}
	}
	_ = b.Close()
	<-served
}

func TestQueueBeyondLimitFlushes(t *testing.T) {
	var b *Conn
	n := 0
	done := make(chan struct{})
	a, b0 := connPair(t, Options{MaxQueuedBytes: 1000}, Options{Handler: func(uint64, []byte) error {
		if n++; n == 100 {
			close(done)
		}
		return nil
	}})
	b = b0
	served := serve(b)
	for i := range 100 {
		if err := a.Queue(uint64(i), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	<-done
	_ = b.Close()
	<-served
}

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

func TestMailboxFull(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		frames int
		full   bool
	}{
		{"within the limit", 1000, 10, false},
		{"one byte over", 999, 10, true},
		{"no limit", -1, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := connPair(t, Options{MaxMailboxBytes: tc.max}, Options{})
			m, _ := a.Mailbox(1)
			for range tc.frames {
				if err := b.Send(1, make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.Send(2, nil); err != nil { // for the handler: marks the end
				t.Fatal(err)
			}
			done := make(chan struct{})
			a.opt.Handler = func(tag uint64, _ []byte) error {
				if tag == 2 {
					close(done)
				}
				return nil
			}
			served := serve(a)
			var mf *MailboxFullError
			if tc.full {
				if err := <-served; !errors.As(err, &mf) || mf.Tag != 1 || mf.Max != int64(tc.max) {
					t.Fatalf("Serve: %v, want a MailboxFullError for tag 1", err)
				}
				return
			}
			<-done
			for range tc.frames {
				if err := m.Next(context.Background(), func(p []byte) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			_ = a.Close()
			<-served
		})
	}
}
