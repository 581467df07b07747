package worker

import (
	"context"
	"errors"
	"sort"
	"time"
)

// Scheduling: which worker runs an execution, when workers are started,
// retired and replaced. All of it runs under Pool.mu.

// signalLocked wakes everyone waiting for a change of the pool.
func (p *Pool) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// addLocked takes a worker that finished starting into the pool, ready,
// and starts its reader.
func (p *Pool) addLocked(w *proc) {
	w.life.to(stateReady, causeNone, "")
	p.procs[w] = struct{}{}
	w.idleSince = time.Now()
	p.wg.Add(1)
	// The reader ends when the worker's socket fails or closes (the
	// worker exited or was killed); it then reaps the process.
	go w.readLoop()
	p.signalLocked()
	p.shrinkLocked()
}

// replenishLocked starts background spawns until Workers idle workers
// exist (or are starting).
func (p *Pool) replenishLocked() {
	if p.closed {
		return
	}
	idle := p.spawning
	for w := range p.procs {
		if w.life.current() == stateReady {
			idle++
		}
	}
	for ; idle < p.cfg.Workers && len(p.procs)+p.spawning < p.cfg.MaxWorkers; idle++ {
		p.spawning++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			w, err := p.spawn()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.spawning--
			if err != nil || p.closed {
				if w != nil {
					w.stop(stopClosed, reasonPoolClosed)
					p.wg.Add(1)
					go w.readLoop()
				}
				p.signalLocked()
				return
			}
			p.addLocked(w)
		}()
	}
}

// errPoolClosed is returned by acquire after Close.
var errPoolClosed = errors.New("worker pool is closed")

// acquire returns a worker with room for one more execution, starting one
// if needed and allowed, or waiting for one.
func (p *Pool) acquire(ctx context.Context) (*proc, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		if w := p.pickLocked(); w != nil {
			p.takeLocked(w)
			p.replenishLocked()
			p.mu.Unlock()
			return w, nil
		}
		if len(p.procs)+p.spawning < p.cfg.MaxWorkers {
			p.spawning++
			// Close waits for the spawn before it stops the starter.
			p.wg.Add(1)
			p.mu.Unlock()
			w, err := p.spawn()
			p.mu.Lock()
			p.spawning--
			if err != nil {
				p.signalLocked()
				p.mu.Unlock()
				p.wg.Done()
				return nil, err
			}
			if p.closed {
				p.mu.Unlock()
				w.stop(stopClosed, reasonPoolClosed)
				p.wg.Add(1)
				go w.readLoop()
				p.wg.Done()
				return nil, errPoolClosed
			}
			p.addLocked(w)
			p.takeLocked(w)
			p.mu.Unlock()
			p.wg.Done()
			return w, nil
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		p.mu.Lock()
	}
}

// pickLocked returns a usable worker with room, preferring one that
// already runs executions (packing), then the idle worker that became idle
// last: the others stay idle, and beyond Workers they age out (see
// shrinkLocked).
func (p *Pool) pickLocked() *proc {
	var idle *proc
	for w := range p.procs {
		if s := w.life.current(); (s != stateReady && s != stateBusy) || w.active >= p.cfg.ExecutionsPerWorker {
			continue
		}
		if w.active > 0 {
			return w
		}
		if idle == nil || w.idleSince.After(idle.idleSince) {
			idle = w
		}
	}
	return idle
}

// takeLocked gives one of worker w's slots to an execution: a ready
// worker becomes busy.
func (p *Pool) takeLocked(w *proc) {
	w.active++
	w.runs++
	if w.active == 1 {
		w.life.to(stateBusy, causeNone, "")
	}
}

// release returns a worker's execution slot; a worker that is not clean
// or reached its quota is retired (draining) and stopped once idle. A
// worker the pool already stopped, or that died, stays as it is.
func (p *Pool) release(w *proc, clean bool) {
	recycle := !clean || w.runsSnapshot() >= p.cfg.RecycleAfter
	if !recycle && w.runsSnapshot()%rssCheckEvery == 0 {
		if rss := procRSS(w.pid); rss > 0 && rss-w.startRSS > p.cfg.RecycleRSSBytes {
			recycle = true
		}
	}
	p.mu.Lock()
	if recycle {
		w.life.to(stateDraining, stopRecycle, "retired")
	}
	w.active--
	stop := false
	if w.active == 0 {
		w.idleSince = time.Now()
		switch w.life.current() {
		case stateBusy:
			w.life.to(stateReady, causeNone, "")
		case stateDraining:
			stop = w.life.to(stateKilled, stopDrained, "retired")
		}
	}
	p.signalLocked()
	p.replenishLocked()
	p.shrinkLocked()
	p.mu.Unlock()
	if stop {
		w.kill()
	}
}

// rssCheckEvery is how often (in executions) a worker's RSS is checked.
const rssCheckEvery = 32

// removed is called by a worker's reader once the process is gone.
func (p *Pool) removed(w *proc) {
	p.mu.Lock()
	delete(p.procs, w)
	p.signalLocked()
	p.replenishLocked()
	p.mu.Unlock()
}

// shrinkLocked arms the shrink timer when more workers are idle than the
// Workers kept warm: the timer's callback (shrinkIdle) stops those idle
// for IdleTimeout. The timer is armed at most once at a time; a worker
// that becomes idle later expires later than the one the timer is armed
// for, and shrinkIdle re-arms it for the next.
func (p *Pool) shrinkLocked() {
	if p.closed || p.shrink != nil || len(p.excessIdleLocked()) == 0 {
		return
	}
	p.shrink = time.AfterFunc(p.cfg.IdleTimeout, p.shrinkIdle)
}

// excessIdleLocked returns the idle workers beyond Workers, the longest
// idle first.
func (p *Pool) excessIdleLocked() []*proc {
	var idle []*proc
	for w := range p.procs {
		if w.life.current() == stateReady {
			idle = append(idle, w)
		}
	}
	if len(idle) <= p.cfg.Workers {
		return nil
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].idleSince.Before(idle[j].idleSince) })
	return idle[:len(idle)-p.cfg.Workers]
}

// shrinkIdle stops the workers idle beyond Workers for IdleTimeout or
// longer, and re-arms the timer for the next one to expire. It runs on the
// timer's goroutine.
func (p *Pool) shrinkIdle() {
	p.mu.Lock()
	p.shrink = nil
	if p.closed {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	var stop []*proc
	for _, w := range p.excessIdleLocked() {
		if left := p.cfg.IdleTimeout - now.Sub(w.idleSince); left > 0 {
			p.shrink = time.AfterFunc(left, p.shrinkIdle)
			break
		}
		if w.life.to(stateKilled, stopIdle, "idle for "+p.cfg.IdleTimeout.String()) {
			stop = append(stop, w)
		}
	}
	p.mu.Unlock()
	for _, w := range stop {
		w.kill()
	}
}
