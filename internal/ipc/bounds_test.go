package ipc

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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

// rawConn returns a Conn and the descriptor its peer writes to: bytes
// written there go straight to the pipe the Conn reads, as from a hostile
// peer.
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
