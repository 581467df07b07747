package server

import (
	"context"
	"sync"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// liveStream delivers a Session's live messages — log lines (stream_logs)
// and tool call progress (stream_progress) — in order, every one of them
// before the result. The script never waits for the client: a message is
// queued and a goroutine sends the queue. Log lines are always queued: the
// queue holds only the lines the execution's log buffer kept, so they are
// bounded by the execution's log limits (max_log_bytes, max_log_entries),
// whatever the client's pace. Progress is offered: once a bounded number
// waits, the newest waiting progress message gives way to the next one,
// which counts it (and whatever it counted) in ToolProgress.dropped. So the
// newest progress message always waits to be sent, and every message
// dropped is counted by one that is delivered — the last ones too. When
// the execution ends, the handler closes the stream and waits for the
// queue to drain before it sends the result.
type liveStream struct {
	mu     sync.Mutex
	queue  []*ptcv1.SessionResponse
	closed bool
	// offered counts the offered messages in queue.
	offered int
	// last is the index in queue of the newest offered message (valid
	// while offered > 0); holes counts the nil entries left in queue by
	// messages that gave way.
	last, holes int
	// wake has room for one signal: the sender looks at the queue again.
	wake chan struct{}
	// drained is closed when the sender has sent everything after close,
	// or given up because the stream failed.
	drained chan struct{}
}

func newLiveStream() *liveStream {
	return &liveStream{wake: make(chan struct{}, 1), drained: make(chan struct{})}
}

// push queues one log line; after close it is dropped (no line can come
// then: the execution has returned).
func (l *liveStream) push(m *ptcv1.SessionResponse) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, m)
	l.mu.Unlock()
	l.signal()
}

// offer queues the progress message m. When limit offered messages
// already wait, the newest of them is dropped and m counts it, adding its
// dropped count and one to its own; m then takes its turn at the end of
// the queue, after any log line queued meanwhile. After close, m is
// ignored: no call runs once the execution has returned.
func (l *liveStream) offer(m *ptcv1.SessionResponse, limit int) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	if l.offered >= limit {
		p := m.GetProgress()
		p.Dropped += l.queue[l.last].GetProgress().GetDropped() + 1
		l.queue[l.last] = nil
		l.holes++
	} else {
		l.offered++
	}
	l.queue = append(l.queue, m)
	l.last = len(l.queue) - 1
	if l.holes > len(l.queue)/2 {
		l.compact()
	}
	l.mu.Unlock()
	l.signal()
}

// compact removes the holes from the queue, so that a stream of dropped
// progress does not grow it; the newest message is the newest offered one
// (compact runs right after an offer).
func (l *liveStream) compact() {
	q := l.queue[:0]
	for _, m := range l.queue {
		if m != nil {
			q = append(q, m)
		}
	}
	clear(l.queue[len(q):])
	l.queue, l.holes, l.last = q, 0, len(q)-1
}

// close says no more messages will come.
func (l *liveStream) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.signal()
}

func (l *liveStream) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take returns the queued messages and whether the stream is closed.
func (l *liveStream) take() ([]*ptcv1.SessionResponse, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue, l.offered, l.holes = nil, 0, 0
	return q, l.closed
}

// run sends the queued messages with send until the stream is closed and
// empty, or a send fails, or ctx ends; it then closes drained. It is the
// body of the Session's live sender.
func (l *liveStream) run(ctx context.Context, send func(*ptcv1.SessionResponse) error) {
	defer close(l.drained)
	for {
		batch, closed := l.take()
		for i, m := range batch {
			if m == nil {
				continue // a progress message that gave way
			}
			if send(m) != nil {
				return
			}
			batch[i] = nil // sent: let it go
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
			return
		}
	}
}
