package idem

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"
)

// digest is a request of two fields, script and input.
func digest(script, input string) Digest {
	return Digest{{Name: "script", Sum: sha256.Sum256([]byte(script))}, {Name: "input", Sum: sha256.Sum256([]byte(input))}}
}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// run claims key, which must be new, and finishes it with val.
func run(t *testing.T, tb *Table[string], key Key, d Digest, val string) {
	t.Helper()
	c, first, err := tb.Claim(key, d)
	if err != nil || !first {
		t.Fatalf("claim %v: first %v, %v", key, first, err)
	}
	tb.Finish(key, c, val, int64(len(val)), nil)
}

// outcome claims key again and returns the kept outcome or the error.
func outcome(tb *Table[string], key Key, d Digest) (string, bool, error) {
	c, first, err := tb.Claim(key, d)
	if err != nil {
		return "", first, err
	}
	if first {
		return "", true, nil
	}
	v, err := c.Wait(context.Background())
	return v, false, err
}

func TestTable(t *testing.T) {
	a, b := Key{Tenant: "t1", ID: "x"}, Key{Tenant: "t1", ID: "y"}
	tests := []struct {
		name string
		// do runs against a table of 10 minutes, 3 entries, 10 bytes
		// whose clock starts at zero.
		do func(t *testing.T, tb *Table[string], clk *clock)
	}{
		{"repeat gets the kept outcome", func(t *testing.T, tb *Table[string], _ *clock) {
			run(t, tb, a, digest("s", "i"), "out")
			if v, first, err := outcome(tb, a, digest("s", "i")); v != "out" || first || err != nil {
				t.Fatalf("%q %v %v", v, first, err)
			}
		}},
		{"another tenant's id never matches", func(t *testing.T, tb *Table[string], _ *clock) {
			run(t, tb, a, digest("s", "i"), "out")
			if _, first, err := outcome(tb, Key{Tenant: "t2", ID: "x"}, digest("other", "i")); !first || err != nil {
				t.Fatalf("first %v, %v", first, err)
			}
		}},
		{"another request names the field", func(t *testing.T, tb *Table[string], _ *clock) {
			run(t, tb, a, digest("s", "i"), "out")
			_, _, err := outcome(tb, a, digest("s", "other"))
			var m *MismatchError
			if !errors.As(err, &m) || m.Field != "input" {
				t.Fatalf("%v", err)
			}
		}},
		{"another request while running", func(t *testing.T, tb *Table[string], _ *clock) {
			if _, first, _ := tb.Claim(a, digest("s", "i")); !first {
				t.Fatal("not first")
			}
			var m *MismatchError
			if _, _, err := tb.Claim(a, digest("s2", "i")); !errors.As(err, &m) || m.Field != "script" {
				t.Fatalf("%v", err)
			}
		}},
		{"a duplicate waits for the running one", func(t *testing.T, tb *Table[string], _ *clock) {
			c, _, _ := tb.Claim(a, digest("s", "i"))
			dup, first, err := tb.Claim(a, digest("s", "i"))
			if first || err != nil {
				t.Fatalf("first %v, %v", first, err)
			}
			got := make(chan string)
			go func() { v, _ := dup.Wait(context.Background()); got <- v }()
			tb.Finish(a, c, "out", 3, nil)
			if v := <-got; v != "out" {
				t.Fatalf("%q", v)
			}
		}},
		{"a wait ends with its context", func(t *testing.T, tb *Table[string], _ *clock) {
			_, _, _ = tb.Claim(a, digest("s", "i"))
			dup, _, _ := tb.Claim(a, digest("s", "i"))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := dup.Wait(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("%v", err)
			}
		}},
		{"the last caller giving up abandons the execution", func(t *testing.T, tb *Table[string], _ *clock) {
			c, _, _ := tb.Claim(a, digest("s", "i"))
			abandoned := make(chan struct{})
			c.Abandon(0, func() { close(abandoned) })
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, _ = c.Wait(ctx)
			<-abandoned
		}},
		{"a caller still waiting keeps it", func(t *testing.T, tb *Table[string], _ *clock) {
			c, _, _ := tb.Claim(a, digest("s", "i"))
			c.Abandon(0, func() { t.Error("abandoned while a caller waits") })
			got := make(chan string)
			waiting := make(chan struct{})
			go func() {
				c.mu.Lock()
				c.waiters++ // as Wait counts itself, before it blocks
				c.mu.Unlock()
				close(waiting)
				<-c.done
				got <- c.val
			}()
			<-waiting
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, _ = c.Wait(ctx)
			c.mu.Lock()
			timer := c.timer
			c.mu.Unlock()
			if timer != nil {
				t.Fatal("the countdown started while a caller waits")
			}
			tb.Finish(a, c, "out", 3, nil)
			if v := <-got; v != "out" {
				t.Fatalf("%q", v)
			}
		}},
		{"a refused request is forgotten", func(t *testing.T, tb *Table[string], _ *clock) {
			c, _, _ := tb.Claim(a, digest("s", "i"))
			dup, _, _ := tb.Claim(a, digest("s", "i"))
			refused := errors.New("refused")
			tb.Finish(a, c, "", 0, refused)
			if _, err := dup.Wait(context.Background()); err != refused {
				t.Fatalf("%v", err)
			}
			if _, first, err := outcome(tb, a, digest("other", "i")); !first || err != nil {
				t.Fatalf("first %v, %v", first, err)
			}
		}},
		{"the retention window ends", func(t *testing.T, tb *Table[string], clk *clock) {
			run(t, tb, a, digest("s", "i"), "out")
			clk.t = clk.t.Add(10*time.Minute - time.Nanosecond)
			if v, _, _ := outcome(tb, a, digest("s", "i")); v != "out" {
				t.Fatalf("kept %q before the window ended", v)
			}
			clk.t = clk.t.Add(time.Nanosecond)
			if _, first, err := outcome(tb, a, digest("other", "i")); !first || err != nil {
				t.Fatalf("after the window: first %v, %v", first, err)
			}
			if n, bytes := tb.Stats(); n != 1 || bytes != 0 {
				t.Fatalf("%d entries, %d bytes", n, bytes)
			}
		}},
		{"the byte bound drops the oldest outcome", func(t *testing.T, tb *Table[string], _ *clock) {
			run(t, tb, a, digest("s", "i"), "123456")
			run(t, tb, b, digest("s", "i"), "abcdef")
			var nk *NotKeptError
			if _, _, err := outcome(tb, a, digest("s", "i")); !errors.As(err, &nk) || nk.Size != 6 || nk.Limit != 10 {
				t.Fatalf("%v", err)
			}
			if v, _, err := outcome(tb, b, digest("s", "i")); v != "abcdef" || err != nil {
				t.Fatalf("%q %v", v, err)
			}
			if _, bytes := tb.Stats(); bytes != 6 {
				t.Fatalf("%d bytes", bytes)
			}
		}},
		{"an outcome larger than the bound is not kept", func(t *testing.T, tb *Table[string], _ *clock) {
			run(t, tb, b, digest("s", "i"), "small")
			run(t, tb, a, digest("s", "i"), "01234567890")
			var nk *NotKeptError
			if _, _, err := outcome(tb, a, digest("s", "i")); !errors.As(err, &nk) || nk.Size != 11 {
				t.Fatalf("%v", err)
			}
			if v, _, err := outcome(tb, b, digest("s", "i")); v != "small" || err != nil {
				t.Fatalf("the others were dropped: %q %v", v, err)
			}
		}},
		{"the count bound forgets the oldest", func(t *testing.T, tb *Table[string], _ *clock) {
			for _, id := range []string{"1", "2", "3", "4"} {
				run(t, tb, Key{ID: id}, digest("s", "i"), "o")
			}
			if n, _ := tb.Stats(); n != 3 {
				t.Fatalf("%d entries", n)
			}
			if _, first, _ := outcome(tb, Key{ID: "1"}, digest("s", "i")); !first {
				t.Fatal("the oldest was not forgotten")
			}
		}},
		{"one tenant's outcomes push out only its own", func(t *testing.T, tb *Table[string], _ *clock) {
			other := Key{Tenant: "t2", ID: "kept"}
			run(t, tb, other, digest("s", "i"), "four")
			// t1 ends more executions, and larger ones, than the table
			// holds: its own oldest go, t2's one stays.
			for _, id := range []string{"1", "2", "3", "4", "5"} {
				run(t, tb, Key{Tenant: "t1", ID: id}, digest("s", "i"), "12345")
			}
			if v, _, err := outcome(tb, other, digest("s", "i")); v != "four" || err != nil {
				t.Fatalf("t2's outcome: %q %v", v, err)
			}
			if v, _, err := outcome(tb, Key{Tenant: "t1", ID: "5"}, digest("s", "i")); v != "12345" || err != nil {
				t.Fatalf("t1's newest: %q %v", v, err)
			}
			if _, first, _ := outcome(tb, Key{Tenant: "t1", ID: "1"}, digest("s", "i")); !first {
				t.Fatal("t1's oldest was not forgotten")
			}
		}},
		{"among equals the oldest goes first", func(t *testing.T, tb *Table[string], _ *clock) {
			// t2 holds more than t1 once t2's second outcome ends: t2's
			// oldest is dropped though t1's is older.
			run(t, tb, Key{Tenant: "t1", ID: "a"}, digest("s", "i"), "abcd")
			run(t, tb, Key{Tenant: "t2", ID: "b"}, digest("s", "i"), "abcd")
			run(t, tb, Key{Tenant: "t2", ID: "c"}, digest("s", "i"), "abcd")
			if v, _, err := outcome(tb, Key{Tenant: "t1", ID: "a"}, digest("s", "i")); v != "abcd" || err != nil {
				t.Fatalf("t1's outcome: %q %v", v, err)
			}
			var nk *NotKeptError
			if _, _, err := outcome(tb, Key{Tenant: "t2", ID: "b"}, digest("s", "i")); !errors.As(err, &nk) {
				t.Fatalf("t2's oldest: %v, want NotKeptError", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(0, 0)}
			tt.do(t, New[string](Config{Retention: 10 * time.Minute, MaxEntries: 3, MaxBytes: 10, Now: clk.now}), clk)
		})
	}
}

func TestDigestDiffers(t *testing.T) {
	short := Digest{{Name: "script"}}
	long := Digest{{Name: "script"}, {Name: "input"}}
	for _, tt := range []struct {
		name string
		a, b Digest
		want string
	}{
		{"same", long, long, ""},
		{"longer", short, long, "input"},
		{"shorter", long, short, "input"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.differs(tt.b); got != tt.want {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestNoOutcomesKept: with MaxBytes below 0 no outcome is kept, and a
// repeat is refused rather than run again.
func TestNoOutcomesKept(t *testing.T) {
	tb := New[string](Config{Retention: time.Minute, MaxEntries: 3, MaxBytes: -1})
	k := Key{Tenant: "t", ID: "x"}
	run(t, tb, k, digest("s", "i"), "")
	var nk *NotKeptError
	if _, _, err := outcome(tb, k, digest("s", "i")); !errors.As(err, &nk) {
		t.Fatalf("%v, want NotKeptError", err)
	}
}

// TestWaitersBounded: while an execution runs, MaxWaiters callers wait
// and one more gets a *BusyError at once; once it ended, any number get
// its outcome.
func TestWaitersBounded(t *testing.T) {
	const max = 2
	tb := New[string](Config{Retention: time.Minute, MaxEntries: 10, MaxBytes: 100, MaxWaiters: max})
	key := Key{Tenant: "t", ID: "a"}
	c, first, _ := tb.Claim(key, digest("s", "i"))
	if !first {
		t.Fatal("not first")
	}
	got := make(chan error, max+1)
	for range max + 1 {
		go func() {
			dup, _, _ := tb.Claim(key, digest("s", "i"))
			_, err := dup.Wait(context.Background())
			got <- err
		}()
	}
	var busy *BusyError
	if err := <-got; !errors.As(err, &busy) || busy.Waiters != max || busy.Key != key {
		t.Fatalf("the caller past the bound: %v", err)
	}
	tb.Finish(key, c, "out", 3, nil)
	for range max {
		if err := <-got; err != nil {
			t.Fatalf("a waiting caller: %v", err)
		}
	}
	for range max + 1 {
		dup, _, _ := tb.Claim(key, digest("s", "i"))
		if v, err := dup.Wait(context.Background()); err != nil || v != "out" {
			t.Fatalf("after the end: %q %v", v, err)
		}
	}
}
