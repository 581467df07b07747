package ipc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// noLoad makes a connection spin whatever the host's load, so that tests
// on a busy machine exercise the spin.
var noLoad = Options{loadavg: "-"}

func TestSpinState(t *testing.T) {
	type event struct{ caught, descheduled bool }
	hit, miss, desched := event{true, false}, event{false, false}, event{true, true}
	for _, tc := range []struct {
		name   string
		events []event
		// then is whether each of the next waits spins.
		then []bool
	}{
		{"fresh", nil, []bool{true, true, true}},
		{"hits keep it on", []event{hit, hit, hit}, []bool{true, true}},
		{"one miss in three keeps it on", []event{miss, hit, miss, miss, hit, miss, miss, hit, miss}, []bool{true}},
		{"misses turn it off, then probe after 1 wait", []event{miss, miss, miss, miss, miss, miss, miss, miss}, []bool{false, true, true}},
		{"failed probes back off", []event{miss, miss, miss, miss, miss, miss, miss, miss, miss, miss},
			// score 0 after 8, probe 1 then 2 then 4 waits apart.
			[]bool{false, false, false, false, true}},
		{"descheduled turns it off at once", []event{desched}, []bool{false, true}},
		{"a caught probe turns it back on", []event{desched, hit}, []bool{true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := spinState{budget: time.Millisecond, score: scoreMax}
			for _, e := range tc.events {
				s.learn(e.caught, e.descheduled)
			}
			for i, want := range tc.then {
				if got := s.spinning(); got != want {
					t.Fatalf("wait %d spins %v, want %v (state %+v)", i, got, want, s)
				}
			}
		})
	}
	t.Run("no budget", func(t *testing.T) {
		s := spinState{score: scoreMax}
		if s.spinning() {
			t.Fatal("a spin state without a budget spins")
		}
	})
}

func TestParseLoadavg(t *testing.T) {
	for _, tc := range []struct {
		line           string
		load, runnable int
	}{
		{"0.52 0.58 0.59 3/116 12345\n", 52, 3},
		{"12.50 1.00 1.00 10/300 1\n", 1250, 10},
		{"3 0 0 1/1 1", 300, 1},
		{"0.7 0.2 0.1 2/9 1", 70, 2},
		{"0.07 0.2", 7, 0},
		{"", 0, 0},
		{"garbage", 0, 0},
	} {
		t.Run(tc.line, func(t *testing.T) {
			load, runnable := parseLoadavg([]byte(tc.line))
			if load != tc.load || runnable != tc.runnable {
				t.Fatalf("got load %d runnable %d, want %d %d", load, runnable, tc.load, tc.runnable)
			}
		})
	}
}

func TestHostLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loadavg")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("0.10 0.10 0.10 1/100 1\n")
	h := hostLoad{fd: openHostLoad(path), cpus: 2}
	if h.fd < 0 {
		t.Fatal("cannot open", path)
	}
	defer unix.Close(h.fd)
	now := time.Now()
	for i, tc := range []struct {
		line string
		busy bool
	}{
		{"0.10 0.10 0.10 1/100 1\n", false},
		{"0.10 0.10 0.10 2/100 1\n", false},
		{"0.10 0.10 0.10 3/100 1\n", true},
		{"3.00 0.10 0.10 1/100 1\n", false},
		{"3.01 0.10 0.10 1/100 1\n", true},
		{"unreadable", false},
	} {
		write(tc.line)
		now = now.Add(hostLoadEvery)
		if got := h.oversubscribed(now); got != tc.busy {
			t.Fatalf("%d: %q: oversubscribed %v, want %v", i, tc.line, got, tc.busy)
		}
	}
	// Within hostLoadEvery the last answer stands.
	write("0.10 0.10 0.10 9/100 1\n")
	if h.oversubscribed(now.Add(hostLoadEvery / 2)) {
		t.Fatal("looked again within hostLoadEvery")
	}
	if (&hostLoad{fd: -1, cpus: 1}).oversubscribed(now) {
		t.Fatal("a host whose load is unknown counts as oversubscribed")
	}
	if fd := openHostLoad(filepath.Join(t.TempDir(), "absent")); fd != -1 {
		t.Fatalf("opening an absent file gave %d", fd)
	}
}

// TestSpinCatchesFrames makes round trips with a peer that answers at
// once: the waiter spins, and the CPU time it spent spinning is counted.
func TestSpinCatchesFrames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   Options
		spins bool
	}{
		{"default", noLoad, true},
		{"spin off", Options{SpinBudget: -1, loadavg: "-"}, false},
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
			runtime.LockOSThread()
			for i := range 50 {
				want := pattern(i, 100)
				got, err := call(context.Background(), a, m, 7, want)
				if err != nil {
					t.Fatal(err)
				}
				checkEqual(t, got, want)
			}
			runtime.UnlockOSThread()
			spins := a.rs.spin.spins
			if tc.spins != (spins > 0) || tc.spins != (m.SpinCPU() > 0) {
				t.Fatalf("%d spins, %s spinning; want spins %v", spins, m.SpinCPU(), tc.spins)
			}
			if !tc.spins && a.rs.spin.host.fd != -1 {
				t.Fatal("a connection that never spins opened the load file")
			}
			_ = a.Close()
			if err := <-served; !errors.Is(err, ErrPeerClosed) {
				t.Fatalf("Serve after the peer closed: %v, want ErrPeerClosed", err)
			}
		})
	}
}

// TestSpinBudget spins on a pipe that stays empty: the spin gives up when
// its budget is spent and counts a miss.
func TestSpinBudget(t *testing.T) {
	opt := noLoad
	opt.SpinBudget = 2 * time.Millisecond
	a, _ := connPair(t, opt, Options{})
	var cpu spinCPU
	got, err := a.spinRead(context.Background(), &cpu)
	if got || err != nil {
		t.Fatalf("spin on an empty pipe: %v %v, want false, nil", got, err)
	}
	// A miss lowers the score by one; on a loaded host the spin may also
	// have found itself descheduled, which sets it to 0.
	s := a.rs.spin
	if s.spins != 1 || s.caught != 0 || (s.score != scoreMax-1 && s.score != 0) {
		t.Fatalf("after a spin that ran out of budget: spins %d caught %d score %d", s.spins, s.caught, s.score)
	}
}

// TestSpinStops checks that a goroutine spinning in Next (with a budget
// no test could wait for) notices Close, the end of its context and the
// peer's going away.
func TestSpinStops(t *testing.T) {
	opt := noLoad
	opt.SpinBudget = time.Hour
	for _, tc := range []struct {
		name string
		stop func(a, b *Conn, cancel context.CancelFunc)
		want error
	}{
		{"close", func(a, _ *Conn, _ context.CancelFunc) { _ = a.Close() }, ErrClosed},
		{"context", func(_, _ *Conn, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"peer closes", func(_, b *Conn, _ context.CancelFunc) { _ = b.Close() }, ErrPeerClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := connPair(t, opt, Options{})
			m, err := a.Mailbox(1)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- m.Next(ctx, func([]byte) error { return nil }) }()
			waitReading(t, a)
			tc.stop(a, b, cancel)
			if err := <-errc; !errors.Is(err, tc.want) {
				t.Fatalf("Next: %v, want %v", err, tc.want)
			}
		})
	}
}

// waitReading waits until a goroutine holds c's reading role.
func waitReading(t *testing.T, c *Conn) {
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
