package python

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// startTimeout bounds an interpreter's start ahead of a request: about
// 0.15 s of CPU, far longer on a loaded host.
const startTimeout = 2 * time.Minute

// Backoff between failed starts: doubled from minBackoff after each
// failure in a row, at most maxBackoff.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// errPoolClosed ends a start that the pool's Close interrupted.
var errPoolClosed = errors.New("the pool is closed")

// warm is an interpreter started ahead of its job: its prelude is loaded
// and waits on its stdin for the job. No job has touched it.
type warm struct {
	inst *wasm.Started
	s    *session
	// taken is closed when a job takes the interpreter (or Close does),
	// which ends its watcher.
	taken chan struct{}
}

// pool keeps up to size interpreters started ahead of requests. One
// goroutine (fill) starts them, one at a time, and replaces each one a job
// takes or that dies while it waits; it ends when close closes quit. Each
// waiting interpreter has a watcher goroutine (counted by watchers) that
// ends when the interpreter is taken or dies.
type pool struct {
	e    *Engine
	size int
	// kick has a token when the pool may be short of interpreters.
	kick   chan struct{}
	quit   chan struct{}
	filled chan struct{} // closed when fill has ended
	// added has a token when an interpreter has joined the pool.
	added    chan struct{}
	watchers sync.WaitGroup

	mu     sync.Mutex
	idle   []*warm
	closed bool
	// started counts the interpreters that joined the pool.
	started int
	// deaths counts interpreters that died while they waited, since the
	// last good start: the fill goroutine backs off after them.
	deaths int
	// running counts the jobs running on interpreters taken from the
	// pool: while one runs and an interpreter still waits, the next start
	// waits for the job to end (see short).
	running int
}

func newPool(e *Engine, size int) *pool {
	p := &pool{e: e, size: size, kick: make(chan struct{}, 1), quit: make(chan struct{}), filled: make(chan struct{}),
		added: make(chan struct{}, 1)}
	go p.fill()
	return p
}

// waiting returns how many interpreters wait in the pool.
func (p *pool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// count returns how many interpreters have joined the pool.
func (p *pool) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started
}

// take returns a waiting interpreter whose memory fits a job's limit of
// memoryBytes, or nil. A nil pool has none. The job it is taken for
// tells done when it ends (Engine.runWarm).
func (p *pool) take(memoryBytes int64) *warm {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		w := p.idle[i]
		if !w.inst.Fits(memoryBytes) {
			continue
		}
		p.idle = append(p.idle[:i], p.idle[i+1:]...)
		close(w.taken)
		p.running++
		p.signal()
		return w
	}
	return nil
}

// done is told that a job on an interpreter take returned has ended.
func (p *pool) done() {
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	p.signal()
}

// signal wakes fill.
func (p *pool) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// short reports whether the pool should start another interpreter: it
// holds fewer than its size, and either none at all or no job runs. A
// start takes about 0.1 s of CPU; on a small host, one beside a running
// job would slow that job (its wall time rose by a third on two cores),
// and while an interpreter waits the next request does not need it yet.
func (p *pool) short() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && len(p.idle) < p.size && (len(p.idle) == 0 || p.running == 0)
}

// fill starts interpreters while the pool is short of them, backing off
// after failures (a start that fails, or an interpreter that dies while
// it waits).
func (p *pool) fill() {
	defer close(p.filled)
	failures := 0
	for {
		p.mu.Lock()
		failures += p.deaths
		p.deaths = 0
		p.mu.Unlock()
		if failures > 0 {
			d := min(minBackoff<<min(failures-1, 16), maxBackoff)
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.quit:
				t.Stop()
				return
			}
		}
		if !p.short() {
			select {
			case <-p.kick:
				continue
			case <-p.quit:
				return
			}
		}
		w, err := p.start()
		if errors.Is(err, errPoolClosed) {
			return
		}
		if err != nil {
			failures++
			continue
		}
		failures = 0
		if !p.add(w) {
			w.inst.Close()
			return
		}
	}
}

// start starts one interpreter and waits until it waits for its job.
func (p *pool) start() (*warm, error) {
	s := newSession(p.e.code)
	s.waiting = make(chan struct{})
	inst, err := p.e.w.StartStreams(p.e.hash, p.e.args(), s.open, s.configure)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-s.waiting:
		return &warm{inst: inst, s: s, taken: make(chan struct{})}, nil
	case <-inst.Done():
		return nil, fmt.Errorf("python: an interpreter started ahead of requests ended before it was ready")
	case <-t.C:
		inst.Close()
		return nil, fmt.Errorf("python: an interpreter started ahead of requests was not ready within %s", startTimeout)
	case <-p.quit:
		inst.Close()
		return nil, errPoolClosed
	}
}

// add puts w in the pool and starts its watcher, or reports false when
// the pool is closed.
func (p *pool) add(w *warm) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.idle = append(p.idle, w)
	p.started++
	select {
	case p.added <- struct{}{}:
	default:
	}
	p.watchers.Add(1)
	// The watcher ends when w is taken (by a job or by close) or dies.
	go func() {
		defer p.watchers.Done()
		select {
		case <-w.taken:
		case <-w.inst.Done():
			p.died(w)
		}
	}()
	return true
}

// died takes w, which ended while it waited, out of the pool.
func (p *pool) died(w *warm) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			close(w.taken)
			p.deaths++
			p.signal()
			return
		}
	}
}

// close stops fill, then the waiting interpreters, and waits for every
// goroutine of the pool to end.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, w := range idle {
		close(w.taken)
	}
	p.mu.Unlock()
	close(p.quit)
	<-p.filled
	for _, w := range idle {
		w.inst.Close()
	}
	p.watchers.Wait()
}
