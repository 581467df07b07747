package server

import (
	"context"
	"sync"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// logStream delivers a Session's live log lines (stream_logs) in order,
// every one of them before the result. The script never waits for the
// client: a line is queued and a goroutine sends the queue. The queue holds
// only the lines the execution's log buffer kept, so it is bounded by the
// execution's log limits (max_log_bytes, max_log_entries), whatever the
// client's pace. When the execution ends, the handler closes the stream and
// waits for the queue to drain before it sends the result.
type logStream struct {
	mu     sync.Mutex
	queue  []*ptcv1.SessionResponse
	closed bool
	// wake has room for one signal: the sender looks at the queue again.
	wake chan struct{}
	// drained is closed when the sender has sent everything after close,
	// or given up because the stream failed.
	drained chan struct{}
}

func newLogStream() *logStream {
	return &logStream{wake: make(chan struct{}, 1), drained: make(chan struct{})}
}

// push queues one line; after close it is dropped (no line can come then:
// the execution has returned).
func (l *logStream) push(m *ptcv1.SessionResponse) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, m)
	l.mu.Unlock()
	l.signal()
}

// close says no more lines will come.
func (l *logStream) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.signal()
}

func (l *logStream) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take returns the queued lines and whether the stream is closed.
func (l *logStream) take() ([]*ptcv1.SessionResponse, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q, l.closed
}

// run sends the queued lines with send until the stream is closed and
// empty, or a send fails, or ctx ends; it then closes drained. It is the
// body of the Session's log goroutine.
func (l *logStream) run(ctx context.Context, send func(*ptcv1.SessionResponse) error) {
	defer close(l.drained)
	for {
		batch, closed := l.take()
		for i, m := range batch {
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
