package executor

import (
	"container/list"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/durable"
)

// ParkedConfig bounds the paused executions a server keeps in memory. A
// paused execution whose engine runs in this process (JavaScript and
// TypeScript in-process, WebAssembly) stays parked — idle, its time budget
// stopped — so that a resume on this server goes on at once, without a
// re-run. Its continuation is issued all the same: evicting a parked
// execution (the oldest first, when a bound is reached, or after MaxAge)
// loses nothing; a resume then re-runs it.
type ParkedConfig struct {
	// Max bounds the parked executions (default 64; negative parks none).
	Max int
	// MaxBytes bounds their estimated memory (default 256 MiB): the
	// tool results they hold, four times over, and 256 KiB each.
	MaxBytes int64
	// MaxAge evicts an execution parked this long (default 10 minutes).
	MaxAge time.Duration
}

// Defaults of ParkedConfig.
const (
	DefaultParkedMax      = 64
	DefaultParkedMaxBytes = 256 << 20
	DefaultParkedMaxAge   = 10 * time.Minute
	parkedBaseBytes       = 256 << 10
)

// parkedSet holds the parked executions by pause id, oldest first.
type parkedSet struct {
	cfg ParkedConfig

	mu    sync.Mutex
	byID  map[string]*list.Element
	order *list.List // of *live, oldest first
	bytes int64
}

func newParkedSet(cfg ParkedConfig) *parkedSet {
	if cfg.Max == 0 {
		cfg.Max = DefaultParkedMax
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultParkedMaxBytes
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultParkedMaxAge
	}
	return &parkedSet{cfg: cfg, byID: map[string]*list.Element{}, order: list.New()}
}

// park keeps lv parked under id, evicting the oldest as needed; false
// when it cannot be parked (the caller stops it).
func (s *parkedSet) park(lv *live, id string) bool {
	if s == nil || s.cfg.Max < 0 || id == "" {
		return false
	}
	lv.rc.pause()
	lv.unlink()
	lv.pauseID = id
	lv.bytes = 4*lv.d.ResultBytes() + int64(len(lv.p.req.Source)+len(lv.p.req.Input)) + parkedBaseBytes
	if lv.bytes > s.cfg.MaxBytes {
		return false
	}
	var evict []*live
	s.mu.Lock()
	for s.order.Len() >= s.cfg.Max || s.bytes+lv.bytes > s.cfg.MaxBytes {
		evict = append(evict, s.removeLocked(s.order.Front()))
	}
	s.byID[id] = s.order.PushBack(lv)
	s.bytes += lv.bytes
	s.mu.Unlock()
	for _, o := range evict {
		o.stopParked()
	}
	// The timer evicts the execution when it has been parked MaxAge; it
	// does nothing when the execution was taken or evicted before.
	time.AfterFunc(s.cfg.MaxAge, func() {
		if o := s.take(id); o != nil {
			o.stopParked()
		}
	})
	return true
}

// take removes and returns the execution parked under id, nil if none.
func (s *parkedSet) take(id string) *live {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return nil
	}
	return s.removeLocked(el)
}

// has reports whether an execution is parked under id.
func (s *parkedSet) has(id string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byID[id]
	return ok
}

// len returns the number of parked executions.
func (s *parkedSet) len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

func (s *parkedSet) removeLocked(el *list.Element) *live {
	lv := s.order.Remove(el).(*live)
	delete(s.byID, lv.pauseID)
	s.bytes -= lv.bytes
	return lv
}

// closeAll evicts every parked execution (the executor is closing).
func (s *parkedSet) closeAll() {
	if s == nil {
		return
	}
	s.mu.Lock()
	var all []*live
	for s.order.Len() > 0 {
		all = append(all, s.removeLocked(s.order.Front()))
	}
	s.mu.Unlock()
	for _, lv := range all {
		lv.stopParked()
	}
}

// stopParked ends a parked engine and waits for it.
func (lv *live) stopParked() {
	lv.cancel(errEvicted)
	<-lv.outc
	lv.release()
}

// peek returns a view of the execution parked under id without taking
// it.
func (s *parkedSet) peek(id string) *parkedView {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[id]; ok {
		lv := el.Value.(*live)
		return &parkedView{p: *lv.p, d: lv.d, usage: lv.usage, pausedAt: lv.pausedAt}
	}
	return nil
}

// parkedView is what a resume reads of a parked execution while
// preparing, copied under the set's lock: the run that takes the
// execution out of the set (another call's, perhaps) changes the live
// execution afterwards.
type parkedView struct {
	p        Prepared
	d        *bridge.Dispatcher
	usage    durable.Usage
	pausedAt time.Time
}
