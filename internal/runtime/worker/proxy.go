package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/ptcrun/ptc/internal/bridge"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	"github.com/ptcrun/ptc/tools"
)

// childExec is one running execution in a worker, and the bridge.Caller of
// its script: the call proxy. Its manifest comes from the Execute frame; a
// call sends a ToolStart frame (in call order) and its answer arrives as
// a ToolReply in the lane's mailbox; discovery sends a Discover frame and
// waits for the DiscoverReply. Every capability of the in-process
// Dispatcher is answered, by the supervisor's Dispatcher, so a script sees
// the same tools object in both modes.
//
// It answers calls itself (Begin and Await, which internal/runtime/js looks for):
// the JavaScript engine begins calls and awaits
// their answers on the lane's own goroutine, which reads the lane's
// mailbox itself. Invocations (Start, for the WebAssembly host's
// concurrent calls) wait the same way from any goroutine: whoever waits
// while no one reads becomes the reader and files what it reads for the
// others.
type childExec struct {
	slot uint64
	// ctx is the execution's context (discovery waits are bound by it).
	ctx    context.Context
	lane   *lane
	names  []string
	inline map[string]bool

	mu sync.Mutex
	// calls numbers the calls sent; refused numbers the tickets of calls
	// refused before sending (above refusedBase).
	calls   uint32
	refused uint32
	// answers holds answers not yet taken, in arrival order.
	answers []answer
	// held are the calls to inline tools begun and not sent yet: they go
	// out when a goroutine waits (or the next call that is sent at once
	// goes), so that calls made together go out together; open counts the
	// calls begun and not answered, held ones included.
	held []*wp.ToolStart
	open int
	// queries counts Discover frames; found holds their answers.
	queries uint32
	found   map[uint32]*wp.DiscoverReply
	// reading is true while a goroutine reads the lane's mailbox; the
	// goroutines waiting for what it reads are woken by closing changed.
	reading bool
	changed chan struct{}
}

var _ bridge.Caller = (*childExec)(nil)

// answer is a call's answer: its ticket, and its JSON result or error.
type answer struct {
	ticket uint32
	result json.RawMessage
	err    error
}

// refusedBase is the first ticket of a call refused before sending: call
// numbers stay consecutive, as the supervisor requires.
const refusedBase = 1 << 31

func newChildExec(ctx context.Context, slot uint64, l *lane, manifest []*wp.Tool) *childExec {
	x := &childExec{ctx: ctx, slot: slot, lane: l, names: make([]string, len(manifest))}
	for i, t := range manifest {
		x.names[i] = t.GetName()
		if t.GetInline() {
			if x.inline == nil {
				x.inline = map[string]bool{}
			}
			x.inline[t.GetName()] = true
		}
	}
	return x
}

// Names returns the callable tool names of the manifest.
func (x *childExec) Names() []string { return x.names }

// Inline reports the manifest's inline flag of a tool.
func (x *childExec) Inline(name string) bool { return x.inline[name] }

// Begin sends the call to the supervisor — a call to an inline tool when
// a goroutine next waits, so that calls made together go out together and
// the supervisor learns whether the script waits on it alone, any other at
// once, as in-process it would start at once — and returns its ticket.
func (x *childExec) Begin(ctx context.Context, name string, args json.RawMessage) uint32 {
	if len(args) > bridge.MaxArgumentBytes {
		// The frame would be refused; answer as the bridge does.
		return x.refuse(&bridge.CallError{Name: bridge.NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(args), bridge.MaxArgumentBytes)})
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.calls++
	x.open++
	m := &wp.ToolStart{Slot: x.slot, Call: x.calls, Tool: name, ArgumentsJson: args}
	if x.inline[name] {
		x.held = append(x.held, m)
		return m.Call
	}
	// Sent under the lock: frames go out in call order.
	x.releaseLocked(false)
	x.sendLocked(m, false)
	return m.Call
}

// releaseLocked queues the held calls (under x.mu), in call order; a
// waiter passes waiting when it waits for a call's answer: a held call
// that is then the only open one is marked alone.
func (x *childExec) releaseLocked(waiting bool) {
	if len(x.held) == 0 {
		return
	}
	if waiting && len(x.held) == 1 && x.open == 1 {
		x.held[0].Alone = true
	}
	for i, m := range x.held {
		x.sendLocked(m, true)
		x.held[i] = nil
	}
	x.held = x.held[:0]
}

// sendLocked sends (or queues) a ToolStart frame; a call that cannot be
// sent is answered with the failure.
func (x *childExec) sendLocked(m *wp.ToolStart, queue bool) {
	if err := sendFrame(x.lane.c.conn, x.slot, &wp.WorkerFrame{Msg: &wp.WorkerFrame_ToolStart{ToolStart: m}}, queue); err != nil {
		x.open--
		x.answers = append(x.answers, answer{ticket: m.Call, err: &bridge.CallError{Name: bridge.NameToolError, Tool: m.Tool,
			Code: tools.CodeToolFailed, Message: "the tool call could not be sent"}})
	}
}

// release sends the held calls: at the end of an execution, calls the
// script began and never waited for reach the supervisor, as in-process
// they start when begun.
func (x *childExec) release() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.releaseLocked(false)
	_ = x.lane.c.conn.Flush()
}

// refuse answers a call that is not sent.
func (x *childExec) refuse(err error) uint32 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.refused++
	t := refusedBase + x.refused
	x.answers = append(x.answers, answer{ticket: t, err: err})
	return t
}

// Await waits for the answer to any call begun and not yet answered and
// returns its ticket and outcome; ticket 0 and the error when ctx ends or
// the connection fails first.
func (x *childExec) Await(ctx context.Context) (uint32, json.RawMessage, error) {
	var a answer
	err := x.wait(ctx, true, func() bool {
		if len(x.answers) == 0 {
			return false
		}
		a = x.answers[0]
		x.answers[0] = answer{}
		x.answers = x.answers[1:]
		return true
	})
	if err != nil {
		return 0, nil, err
	}
	return a.ticket, a.result, a.err
}

// Start sends the call; its Invocation waits for the answer.
func (x *childExec) Start(ctx context.Context, name string, args json.RawMessage) bridge.Invocation {
	t := x.Begin(ctx, name, args)
	return func() (json.RawMessage, error) {
		var a answer
		err := x.wait(ctx, true, func() bool {
			for i := range x.answers {
				if x.answers[i].ticket == t {
					a = x.answers[i]
					x.answers = append(x.answers[:i], x.answers[i+1:]...)
					return true
				}
			}
			return false
		})
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeTimeout, Message: "the execution's time ran out during the call"}
			}
			return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"}
		}
		return a.result, a.err
	}
}

// StartNow is Start: a proxy's invocations only wait for an answer (the
// concurrency bound is the supervisor's).
func (x *childExec) StartNow(ctx context.Context, name string, args json.RawMessage) (bridge.Invocation, bool) {
	return x.Start(ctx, name, args), true
}

// Call is Start followed by its Invocation.
func (x *childExec) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return x.Start(ctx, name, args)()
}

// wait waits until got (called under x.mu) takes what the caller waits
// for. While no other goroutine reads the lane's mailbox, the caller reads
// it, filing the answers it reads; otherwise it waits to be told of new
// ones. Frames the caller queued go out before it blocks (Next writes
// them). forCall tells that the caller waits for a call's answer (not for
// a discovery).
func (x *childExec) wait(ctx context.Context, forCall bool, got func() bool) error {
	x.mu.Lock()
	// The held calls go out before this goroutine waits: it may wait for
	// their answers.
	x.releaseLocked(forCall)
	for {
		if got() {
			x.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			x.mu.Unlock()
			return err
		}
		if !x.reading {
			x.reading = true
			x.mu.Unlock()
			var in wp.SupervisorFrame
			err := x.lane.mb.Next(ctx, func(b []byte) error { return proto.Unmarshal(b, &in) })
			x.mu.Lock()
			x.reading = false
			if err == nil {
				x.file(&in)
			}
			if x.changed != nil {
				// Wake the others: what they wait for may have come, and
				// one of them must read next.
				close(x.changed)
				x.changed = nil
			}
			if err != nil && ctx.Err() == nil {
				// The connection ended: nothing more will arrive.
				x.mu.Unlock()
				return err
			}
			continue
		}
		if x.changed == nil {
			x.changed = make(chan struct{})
		}
		ch := x.changed
		x.mu.Unlock()
		// Queued calls go out before this goroutine blocks: the reader
		// may be waiting for answers to them.
		_ = x.lane.c.conn.Flush()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		x.mu.Lock()
	}
}

// file records a frame read from the lane's mailbox (under x.mu): an
// answer of this execution. Answers to an execution that has ended are
// dropped, and so is an Execute frame for a lane that is busy (the
// supervisor does not send one), which is refused.
func (x *childExec) file(in *wp.SupervisorFrame) {
	switch m := in.Msg.(type) {
	case *wp.SupervisorFrame_ToolReply:
		r := m.ToolReply
		if r.GetSlot() != x.slot || r.GetCall() == 0 || r.GetCall() > x.calls {
			return
		}
		if x.open > 0 {
			x.open--
		}
		a := answer{ticket: r.GetCall(), result: json.RawMessage(r.GetResultJson())}
		if r.GetError() != nil {
			a.result, a.err = nil, callErrorFromPB(r.GetError())
		}
		x.answers = append(x.answers, a)
	case *wp.SupervisorFrame_DiscoverReply:
		r := m.DiscoverReply
		if r.GetSlot() != x.slot {
			return
		}
		if x.found == nil {
			x.found = map[uint32]*wp.DiscoverReply{}
		}
		x.found[r.GetId()] = r
	case *wp.SupervisorFrame_Execute:
		slot := m.Execute.GetSlot()
		_ = sendFrame(x.lane.c.conn, slot, refusal(slot, "slot already in use"), false)
	}
}

// Search asks the supervisor to rank the tools (tools.$search).
func (x *childExec) Search(query string, limit int) []bridge.SearchHit {
	r := x.discover(&wp.Discover{Request: &wp.Discover_Search{Search: &wp.Search{Query: query, Limit: int32(max(min(limit, bridge.MaxSearchResults), -1))}}})
	hits := []bridge.SearchHit{}
	if r != nil && r.GetFound() {
		_ = json.Unmarshal(r.GetResultJson(), &hits)
	}
	return hits
}

// Describe asks the supervisor to describe one tool (tools.$describe).
func (x *childExec) Describe(name string) (bridge.Description, bool) {
	r := x.discover(&wp.Discover{Request: &wp.Discover_Describe{Describe: name}})
	var d bridge.Description
	if r == nil || !r.GetFound() || json.Unmarshal(r.GetResultJson(), &d) != nil {
		return bridge.Description{}, false
	}
	return d, true
}

// discover sends a Discover frame and waits for its reply; nil when the
// execution ends first or the frame cannot be sent.
func (x *childExec) discover(m *wp.Discover) *wp.DiscoverReply {
	x.mu.Lock()
	x.queries++
	m.Slot, m.Id = x.slot, x.queries
	err := sendFrame(x.lane.c.conn, x.slot, &wp.WorkerFrame{Msg: &wp.WorkerFrame_Discover{Discover: m}}, false)
	x.mu.Unlock()
	if err != nil {
		return nil
	}
	var r *wp.DiscoverReply
	if x.wait(x.ctx, false, func() bool {
		r = x.found[m.Id]
		delete(x.found, m.Id)
		return r != nil
	}) != nil {
		return nil
	}
	return r
}
