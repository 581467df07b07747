package ipc

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultSpinBudget is how long a reader that waits for a frame retries
// the empty pipe before it blocks in poll (Options.SpinBudget).
const DefaultSpinBudget = 50 * time.Microsecond

const (
	// scoreMax and scoreSpin shape the prediction: a spin that caught its
	// frame adds two to the score (up to scoreMax), one that did not
	// takes one away; the reader spins while the score is at least
	// scoreSpin — while at least a third of recent spins caught their
	// frame (a worker's lane waits both for answers, which come at once,
	// and for its next execution, which does not).
	scoreMax  = 8
	scoreSpin = 1
	// probeMax bounds the back-off of a reader that stopped spinning: it
	// tries one spin after 1, 2, 4, … up to probeMax waits without.
	probeMax = 64
	// minDescheduled is the shortest spin that can show the thread was
	// descheduled.
	minDescheduled = 10 * time.Microsecond
)

// spinState decides whether the holder of the reading role spins before
// it blocks, and learns from every spin. It passes with the reading role
// (it is part of readState), so it needs no lock.
//
// The prediction: a spin that caught its frame raises the score twice as
// much as one that ran out of budget lowers it, and the reader spins
// while the score is positive. A connection whose frames come late, or a
// host so loaded that the peer does not get a CPU while this side spins
// (the spin then takes the CPU the answer needs, and fails), stops
// spinning within a few waits; it then probes with one spin after 1, 2,
// 4, … up to probeMax waits, so the share of waits that spin in vain
// stays small, and a probe that succeeds turns spinning back on. A spin
// during which the thread got less than half of the wall time (it was
// descheduled: the host is oversubscribed) counts as a failure whatever
// it caught and ends the spinning at once. A blocked wait costs no CPU,
// so an idle connection costs one spin at most per wait, and nothing
// while it waits.
type spinState struct {
	budget time.Duration // 0: never spin
	score  int
	skip   int // waits left before the next probe while score is 0
	probe  int // the back-off: waits between probes
	host   hostLoad
	// spins and caught count the spins and those that caught a frame
	// (for tests).
	spins, caught int
}

// hostLoadEvery is how often a spinning reader looks at the host's
// runnable threads.
const hostLoadEvery = time.Millisecond

// hostLoad tells whether the host is oversubscribed: more threads
// runnable now than it has CPUs (the fourth field of /proc/loadavg,
// runnable/total; the count includes the reader itself, which runs as it
// reads), or a load average over the last minute above the number of
// CPUs plus one (the first field: a host that was busy a moment ago most
// likely still is, whatever one look at it shows; the one is for the
// threads of this very exchange, which count in the load average while
// they spin — two sides spinning in turn on a host with nothing else to
// do show a load of up to 2). The file is read with pread
// on a descriptor opened with the connection (a worker that locks down
// later keeps it), at most once per hostLoadEvery. On an oversubscribed
// host a spin takes a CPU that a runnable thread — maybe the peer, about
// to answer — would use, so no reader spins.
type hostLoad struct {
	fd   int // -1: unknown, taken as not oversubscribed
	cpus int
	next time.Time
	busy bool
	buf  [128]byte
}

// oversubscribed reports whether more threads were runnable than there
// are CPUs when last looked, looking again when that is hostLoadEvery old.
func (h *hostLoad) oversubscribed(now time.Time) bool {
	if h.fd < 0 {
		return false
	}
	if now.Before(h.next) {
		return h.busy
	}
	h.next = now.Add(hostLoadEvery)
	n, err := unix.Pread(h.fd, h.buf[:], 0)
	if err != nil || n <= 0 {
		h.busy = false
		return false
	}
	load, runnable := parseLoadavg(h.buf[:n])
	h.busy = runnable > h.cpus || load > 100*(h.cpus+1)
	return h.busy
}

// parseLoadavg returns the load average over the last minute, in
// hundredths, and the threads runnable now, of a /proc/loadavg line
// ("0.52 0.58 0.59 3/116 12345"); a value not there is 0.
func parseLoadavg(b []byte) (load, runnable int) {
	field, i := 0, 0
	num := func() int {
		n := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			n = n*10 + int(b[i]-'0')
		}
		return n
	}
	for i < len(b) {
		switch {
		case b[i] == ' ':
			field++
			i++
		case field == 0:
			load = 100 * num()
			if i < len(b) && b[i] == '.' {
				i++
				for k := 10; k >= 1 && i < len(b) && b[i] >= '0' && b[i] <= '9'; k /= 10 {
					load += k * int(b[i]-'0')
					i++
				}
			}
			for i < len(b) && b[i] != ' ' {
				i++
			}
		case field == 3:
			return load, num()
		default:
			i++
		}
	}
	return load, 0
}

// openHostLoad opens path (/proc/loadavg) for a connection's spin state;
// -1 when it cannot (the reader then relies on its other signals).
func openHostLoad(path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// spinning reports whether the next wait should spin first.
func (s *spinState) spinning() bool {
	if s.budget <= 0 {
		return false
	}
	if s.score >= scoreSpin {
		return true
	}
	if s.skip > 0 {
		s.skip--
		return false
	}
	return true // a probe
}

// learn records a spin: whether it caught its frame and whether the
// thread had the CPU while it spun.
func (s *spinState) learn(caught, descheduled bool) {
	switch {
	case descheduled:
		s.score = 0
	case caught:
		s.score = min(s.score+2, scoreMax)
		s.probe = 0
		return
	default:
		s.score = max(s.score-1, 0)
	}
	if s.score == 0 {
		s.probe = min(max(2*s.probe, 1), probeMax)
		s.skip = s.probe
	}
}

// spinRead retries the non-blocking read of the pipe for at most the
// spin budget, while the spin state predicts a frame soon. It returns
// true when bytes were read (they are in the read buffer), false when the
// caller should block in poll. It stops as soon as the connection fails
// or closes, or ctx ends, and leaves the reporting of either to the
// caller's next look. The caller holds the reading role and has entered
// the connection; cpu accumulates the thread's CPU time spent here.
//
// Each try is one read(2): a poll(2) with no timeout before it would
// cost a second system call, and yielding the CPU between tries
// (sched_yield) hands whole time slices to any runnable thread, even a
// niced one, on a host with background work.
func (c *Conn) spinRead(ctx context.Context, cpu *spinCPU) (bool, error) {
	s := &c.rs.spin
	if s.budget <= 0 {
		return false, nil
	}
	start := time.Now()
	if s.host.oversubscribed(start) || !s.spinning() {
		return false, nil
	}
	done := ctx.Done()
	cpu0 := threadCPU()
	caught := false
	var err error
	s.spins++
spin:
	for !c.down.Load() {
		if done != nil {
			select {
			case <-done:
				break spin
			default:
			}
		}
		if err = c.rs.fill(c.rfd); err != errAgain {
			caught = err == nil
			break
		}
		err = nil
		if time.Since(start) >= s.budget {
			break
		}
	}
	wall := time.Since(start)
	used := cpu.add(cpu0)
	if caught {
		s.caught++
	}
	if err == nil {
		// Descheduled: less than half the wall time on the CPU. A spin
		// of a few microseconds cannot tell (the clocks' own reads weigh
		// in it), and being descheduled takes longer.
		s.learn(caught, wall > minDescheduled && 2*used < wall)
	}
	return caught, err
}

// spinCPU accumulates the CPU time a goroutine's thread spent spinning,
// read from the thread's CPU clock, so that whoever charges the thread's
// CPU time to a script can leave the waits out (Mailbox.SpinCPU).
type spinCPU struct {
	total atomic.Int64 // nanoseconds
}

// add adds the thread's CPU time since cpu0 and returns it.
func (s *spinCPU) add(cpu0 int64) time.Duration {
	d := threadCPU() - cpu0
	if d <= 0 {
		return 0
	}
	s.total.Add(d)
	return time.Duration(d)
}

// threadCPU reads the calling thread's CPU clock in nanoseconds (0 when
// it cannot be read).
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
