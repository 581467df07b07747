package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ptcrun/ptc/bridge"
	wp "github.com/ptcrun/ptc/internal/workerproto"
	"github.com/ptcrun/ptc/tools"
)

// childExec is one running execution in a worker, and the bridge.Caller of
// its script: the call proxy. Its manifest comes from the Execute frame; a
// call sends a ToolStart frame (in call order) and its Invocation waits for
// the supervisor's ToolReply; discovery sends a Discover frame and waits for
// the DiscoverReply. Every capability of the in-process Dispatcher is
// answered, by the supervisor's Dispatcher, so a script sees the same tools
// object in both modes.
type childExec struct {
	slot   uint64
	ctx    context.Context
	cancel context.CancelFunc
	w      *frameWriter
	names  []string
	inline map[string]bool

	// paused is set when the supervisor stops the execution because it
	// paused.
	paused atomic.Bool

	mu        sync.Mutex
	next      uint32
	replies   map[uint32]chan *wp.ToolReply
	nextQuery uint32
	queries   map[uint32]chan *wp.DiscoverReply
}

var _ bridge.Caller = (*childExec)(nil)

func newChildExec(ctx context.Context, slot uint64, cancel context.CancelFunc, w *frameWriter, manifest []*wp.Tool) *childExec {
	x := &childExec{slot: slot, ctx: ctx, cancel: cancel, w: w, names: make([]string, len(manifest)),
		replies: map[uint32]chan *wp.ToolReply{}}
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

// Call is Start followed by its Invocation.
func (x *childExec) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return x.Start(ctx, name, args)()
}

// Start sends the call to the supervisor.
func (x *childExec) Start(ctx context.Context, name string, args json.RawMessage) bridge.Invocation {
	if len(args) > bridge.MaxArgumentBytes {
		// The frame would be refused; answer as the bridge does.
		err := &bridge.CallError{Name: bridge.NameArgumentError, Tool: name, Code: tools.CodeInvalidArguments,
			Message: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(args), bridge.MaxArgumentBytes)}
		return func() (json.RawMessage, error) { return nil, err }
	}
	ch := make(chan *wp.ToolReply, 1)
	x.mu.Lock()
	x.next++
	id := x.next
	x.replies[id] = ch
	x.mu.Unlock()
	err := x.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_ToolStart{ToolStart: &wp.ToolStart{
		Slot: x.slot, Call: id, Tool: name, ArgumentsJson: args}}})
	if err != nil {
		x.mu.Lock()
		delete(x.replies, id)
		x.mu.Unlock()
		ce := &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeToolFailed, Message: "the tool call could not be sent"}
		return func() (json.RawMessage, error) { return nil, ce }
	}
	return func() (json.RawMessage, error) {
		select {
		case r := <-ch:
			if r.GetError() != nil {
				return nil, callErrorFromPB(r.GetError())
			}
			return json.RawMessage(r.GetResultJson()), nil
		case <-ctx.Done():
			x.mu.Lock()
			delete(x.replies, id)
			x.mu.Unlock()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeTimeout, Message: "the execution's time ran out during the call"}
			}
			return nil, &bridge.CallError{Name: bridge.NameToolError, Tool: name, Code: tools.CodeCancelled, Message: "the call was cancelled"}
		}
	}
}

// deliverReply routes a tool result to the call waiting for it.
func (x *childExec) deliverReply(m *wp.ToolReply) {
	x.mu.Lock()
	ch := x.replies[m.GetCall()]
	delete(x.replies, m.GetCall())
	x.mu.Unlock()
	if ch != nil {
		ch <- m
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
	ch := make(chan *wp.DiscoverReply, 1)
	x.mu.Lock()
	x.nextQuery++
	m.Slot, m.Id = x.slot, x.nextQuery
	if x.queries == nil {
		x.queries = map[uint32]chan *wp.DiscoverReply{}
	}
	x.queries[m.Id] = ch
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		delete(x.queries, m.Id)
		x.mu.Unlock()
	}()
	if x.w.write(&wp.WorkerFrame{Msg: &wp.WorkerFrame_Discover{Discover: m}}) != nil {
		return nil
	}
	select {
	case r := <-ch:
		return r
	case <-x.ctx.Done():
		return nil
	}
}

// deliverDiscovery routes a discovery answer to the request waiting for it.
func (x *childExec) deliverDiscovery(m *wp.DiscoverReply) {
	x.mu.Lock()
	ch := x.queries[m.GetId()]
	delete(x.queries, m.GetId())
	x.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}
