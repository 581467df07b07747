package wasm

import (
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/cpuclock"
)

// guestCPU is a guest's compute time: the CPU clock of the thread it runs
// on, from the start of its job, less the stretches in which the host ran
// work of its own on that thread (an inline tool call: exclude). Its
// methods are safe from any goroutine; the thread's clock can be read from
// any thread.
type guestCPU struct {
	clock cpuclock.Clock

	mu sync.Mutex
	// base is the clock's reading at the job's start plus the excluded
	// stretches that have ended.
	base time.Duration
	// stretch is the clock's reading when the excluded stretch under way
	// began (inStretch).
	stretch   time.Duration
	inStretch bool
}

// newGuestCPU returns the compute time of the calling thread's guest,
// counted from now; the caller's goroutine must be locked to its thread.
func newGuestCPU() *guestCPU {
	c := cpuclock.Thread()
	return &guestCPU{clock: c, base: c.Now()}
}

// restart counts from now: the job begins.
func (g *guestCPU) restart() {
	g.mu.Lock()
	g.base = g.clock.Now()
	g.mu.Unlock()
}

// now returns the guest's compute time so far (never negative); during an
// excluded stretch, as it was when the stretch began.
func (g *guestCPU) now() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.stretch
	if !g.inStretch {
		t = g.clock.Now()
	}
	return max(t-g.base, 0)
}

// exclude runs f, which the guest's thread runs for the host, without
// charging its CPU time to the guest.
func (g *guestCPU) exclude(f func()) {
	g.mu.Lock()
	g.stretch, g.inStretch = g.clock.Now(), true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.base += g.clock.Now() - g.stretch
		g.inStretch = false
		g.mu.Unlock()
	}()
	f()
}
