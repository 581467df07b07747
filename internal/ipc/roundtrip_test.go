package ipc

import (
	"context"
	"errors"
	"fmt"
	"testing"
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
