package mcpserve

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
)

// MaxQueuedProgress bounds the progress notifications waiting to be sent
// for one call; past it, events are dropped rather than slowing the
// program, and a summary is sent at the end.
const MaxQueuedProgress = 64

// progressEvent is one notification to send.
type progressEvent struct {
	progress float64
	message  string
}

// reporter sends a call's progress notifications: one when each tool call
// of the program starts and one when it ends. It is the execution's
// core.CallObserver: the program's goroutines only queue events (it never
// blocks them); the reporter's goroutine sends them. Progress counts the
// events, so it increases with every notification; the total is unknown.
type reporter struct {
	ctx   context.Context
	ss    *sdk.ServerSession
	token any

	mu                sync.Mutex
	queue             []progressEvent
	events            float64
	started, finished int
	dropped           bool

	wake   chan struct{} // a queued event, capacity 1
	done   chan struct{} // closed by stop
	exited chan struct{} // closed when the goroutine has sent everything
}

// newReporter starts a reporter for the call with this progress token. Its
// goroutine ends when stop is called, after sending what is queued.
func newReporter(ctx context.Context, ss *sdk.ServerSession, token any) *reporter {
	r := &reporter{ctx: ctx, ss: ss, token: token,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go r.loop()
	return r
}

// CallStarted implements core.CallObserver.
func (r *reporter) CallStarted(ctx context.Context, ev *core.CallEvent) context.Context {
	r.observe(ev)
	return ctx
}

// CallFinished implements core.CallObserver.
func (r *reporter) CallFinished(_ context.Context, ev *core.CallEvent) { r.observe(ev) }

// observe queues the notification of one event.
func (r *reporter) observe(ev *core.CallEvent) {
	r.mu.Lock()
	r.events++
	var msg string
	if ev.Finished {
		r.finished++
		switch {
		case ev.OK:
			msg = fmt.Sprintf("call %d %s: ok in %s", ev.Seq, ev.Tool, ev.Duration.Round(time.Millisecond))
		default:
			msg = fmt.Sprintf("call %d %s: failed (%s)", ev.Seq, ev.Tool, ev.ErrorCode)
		}
	} else {
		r.started++
		msg = fmt.Sprintf("call %d %s: started", ev.Seq, ev.Tool)
	}
	if len(r.queue) < MaxQueuedProgress {
		r.queue = append(r.queue, progressEvent{progress: r.events, message: msg})
	} else {
		r.dropped = true
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reporter) loop() {
	defer close(r.exited)
	for {
		select {
		case <-r.wake:
			r.flush()
		case <-r.done:
			r.flush()
			r.mu.Lock()
			dropped, events, started, finished := r.dropped, r.events, r.started, r.finished
			r.mu.Unlock()
			if dropped {
				r.send(progressEvent{progress: events + 1,
					message: fmt.Sprintf("%d tool calls started, %d finished", started, finished)})
			}
			return
		}
	}
}

// flush sends the queued events.
func (r *reporter) flush() {
	r.mu.Lock()
	q := r.queue
	r.queue = nil
	r.mu.Unlock()
	for _, e := range q {
		r.send(e)
	}
}

// send sends one notification; a client that has gone away is ignored
// (the call's answer fails the same way).
func (r *reporter) send(e progressEvent) {
	_ = r.ss.NotifyProgress(r.ctx, &sdk.ProgressNotificationParams{ProgressToken: r.token, Progress: e.progress, Message: e.message})
}

// stop sends what is queued and returns when the goroutine has ended; no
// notification follows the call's answer.
func (r *reporter) stop() {
	close(r.done)
	<-r.exited
}
