package server

import (
	"context"
	"errors"
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
// queue to drain before it sends the result. A message the execution waits
// on (a tool call, an approval request) is delivered: queued behind what
// came before it, and its sender told when it was sent.
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
	// sent has room for one signal: a message was sent (the client is
	// reading).
	sent chan struct{}
	// waiting holds the delivered messages not sent yet, each with the
	// channel its sender waits on, or nil once that sender gave up: the
	// message is then not sent.
	waiting map[*ptcv1.SessionResponse]chan error
}

// errLiveEnded is deliver's error once the stream failed or was closed.
var errLiveEnded = errors.New("the stream to the client ended")

// deliver queues m behind every message queued before it and waits until
// it was sent (the send's error), ctx ended (m is then not sent), or the
// stream ended.
func (l *liveStream) deliver(ctx context.Context, m *ptcv1.SessionResponse) error {
	done := make(chan error, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errLiveEnded
	}
	if l.waiting == nil {
		l.waiting = map[*ptcv1.SessionResponse]chan error{}
	}
	l.waiting[m] = done
	l.queue = append(l.queue, m)
	l.mu.Unlock()
	l.signal()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	case <-l.drained:
	}
	l.mu.Lock()
	_, unsent := l.waiting[m]
	if unsent {
		l.waiting[m] = nil
	}
	l.mu.Unlock()
	if !unsent {
		return <-done // sent (or failed) meanwhile
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errLiveEnded
}

// sendable reports whether m is still to be sent — not a delivered
// message whose sender gave up — and, for a delivered one, the channel to
// tell its sender.
func (l *liveStream) sendable(m *ptcv1.SessionResponse) (chan error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	done, delivered := l.waiting[m]
	if !delivered {
		return nil, true
	}
	delete(l.waiting, m)
	return done, done != nil
}

func newLiveStream() *liveStream {
	return &liveStream{wake: make(chan struct{}, 1), drained: make(chan struct{}), sent: make(chan struct{}, 1)}
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
			done, ok := l.sendable(m)
			if !ok {
				continue
			}
			err := send(m)
			if done != nil {
				done <- err
			}
			if err != nil {
				return
			}
			select {
			case l.sent <- struct{}{}:
			default:
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
