package ipc

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

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

// TestSentPayloadNotKept: once Send returns, the connection holds no
// reference to the payload it wrote without copying (a connection kept its
// last large frame alive for as long as it lived).
func TestSentPayloadNotKept(t *testing.T) {
	got := make(chan struct{}, 1)
	a, b := connPair(t, Options{}, Options{Handler: func(uint64, []byte) error {
		got <- struct{}{}
		return nil
	}})
	served := serve(b)
	freed := make(chan struct{})
	func() {
		payload := make([]byte, 1<<20)
		runtime.SetFinalizer(&payload[0], func(*byte) { close(freed) })
		if err := a.Send(1, payload); err != nil {
			t.Fatal(err)
		}
	}()
	<-got
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case <-freed:
			_ = b.Close()
			<-served
			return
		case <-deadline:
			t.Fatal("the connection still holds the payload it sent")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
