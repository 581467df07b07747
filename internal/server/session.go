package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/telemetry"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

const (
	// progressQueue bounds the progress messages waiting for the client to
	// read; past it the newest waiting one is dropped for the next, which
	// counts it. Log lines are never dropped (the execution's log limits
	// bound them).
	progressQueue = 256
	// defaultResultGrace bounds how long the final result (and the live
	// messages before it) wait for a client that does not read
	// (WithResultGrace).
	defaultResultGrace = 10 * time.Second
	// defaultHalfCloseGrace is how long a half-close waits, while client
	// calls or approvals are pending, for the end of the RPC before it
	// fails them: a client that drops its RPC may send END_STREAM right
	// before RST_STREAM (Node's http2 closes a stream so, and grpc-js with
	// it), and a drop ends the execution CANCELLED instead.
	defaultHalfCloseGrace = 100 * time.Millisecond
	// maxEchoedCallID bounds the call_id a ProtocolError echoes.
	maxEchoedCallID = 128
)

// session is one Session stream. The handler goroutine runs the
// execution; whoever has a message sends it under sendLock, one message
// in flight at a time, so a client that never reads cannot make the server
// buffer without bound. Live log lines and progress queue on live for a
// sender goroutine, in order, and all of them are sent before the result;
// when they are streamed, tool calls and approval requests go through
// live too (their goroutine waits until the sender sent them), so the
// client sees everything in the order the script produced it. One
// receiver goroutine owns stream.Recv. The receiver and the sender end
// when the handler returns.
type session struct {
	stream ptcv1.RunnerService_SessionServer
	// sendLock serialises stream.Send (a channel, so waiting honours ctx).
	sendLock chan struct{}
	// live delivers log lines and progress in order, before the result.
	live *liveStream
	// progressValues lets progress carry values.
	progressValues bool
	// ordered: live messages are streamed, so a tool call or approval
	// request goes out through live, behind the lines and progress the
	// script produced before it.
	ordered bool

	mu       sync.Mutex
	pending  map[string]chan *ptcv1.ToolResult
	answered map[string]bool
	// approvals holds the calls waiting for the client's approval, by
	// call id ("a" and the call's seq).
	approvals map[string]chan *ptcv1.Approval
	closed    bool // the client half-closed: no more results can arrive
	nextID    int64
	// halfCloseGrace is the Server's (defaultHalfCloseGrace).
	halfCloseGrace time.Duration
}

// Session runs one execution whose client tools are served by the caller
// over the stream. With WithIdempotency, a Session with an execution_id
// repeated with the same request gets the first one's result (waiting
// while it runs) instead of running again; the execution stays bound to
// the first stream, which serves its client tools.
func (s *Server) Session(stream ptcv1.RunnerService_SessionServer) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return status.Error(codes.InvalidArgument, "the stream closed before a start message")
		}
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message of a Session must be start")
	}
	req, ferr := wire.RequestFromPB(start.GetExecute())
	if ferr != nil {
		return wire.Status(ferr)
	}
	if req.Resumable {
		return status.Error(codes.InvalidArgument, "a Session is not resumable: it holds its stream and asks for approvals with approval_request (use Execute with resumable to pause)")
	}
	if len(req.ClientTools) > 0 {
		return status.Error(codes.InvalidArgument, "a Session takes its client tools in SessionStart.client_tools, not in execute.client_tools")
	}
	tenant, ferr := s.applyTenant(stream.Context(), &req)
	if ferr != nil {
		return wire.Status(ferr)
	}
	ss := &session{
		stream:    stream,
		sendLock:  make(chan struct{}, 1),
		live:      newLiveStream(),
		pending:   map[string]chan *ptcv1.ToolResult{},
		answered:  map[string]bool{},
		approvals: map[string]chan *ptcv1.Approval{},

		halfCloseGrace: s.halfCloseGrace,
	}
	req.Approve = ss.approve
	// The executor checks the client tools and compiles their schemas
	// (through its cache, and within its bound on their values together).
	for _, d := range start.GetClientTools() {
		req.ClientTools = append(req.ClientTools, tools.Tool{Definition: wire.DefinitionFromPB(d), Handler: ss.forward, Inline: true})
	}
	streamLogs := start.GetExecute().GetStreamLogs()
	if streamLogs {
		req.OnLog = func(e core.LogEntry) {
			// Queued, never blocking the script; the log buffer keeps only
			// what the execution's log limits allow, so the queue is bounded.
			ss.live.push(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Log{Log: wire.LogPB(e)}})
		}
	}
	streamProgress := start.GetExecute().GetStreamProgress()
	if streamProgress {
		ss.progressValues = req.ProgressValues
		req.Observer = ss
	}
	// With an execution_id under the record, a repeat gets the first
	// one's outcome; the first tells the record how it ended, once.
	finish, kept, err := s.sessionOnce(stream.Context(), start)
	if err != nil {
		return err
	}
	if kept != nil {
		return stream.Send(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Result{Result: kept}})
	}
	if finish == nil {
		finish = func(*core.Result, *fault.Error) {}
	}
	p, ferr := s.exec.PrepareContext(stream.Context(), req, tenant.ceilings())
	if ferr != nil {
		finish(nil, ferr)
		return wire.Status(ferr)
	}

	ectx, done := s.execContext(stream.Context())
	defer done()
	release, ferr := s.admit(ectx, p, tenant)
	if ferr != nil {
		finish(nil, ferr)
		return wire.Status(ferr)
	}
	defer release()
	ctx, cancel := context.WithCancelCause(ectx)
	defer cancel(nil)

	if streamLogs || streamProgress {
		// The sender ends once the queue is closed and sent, or when the
		// stream fails or ends.
		ss.ordered = true
		go ss.live.run(stream.Context(), func(m *ptcv1.SessionResponse) error { return ss.send(stream.Context(), m) })
	} else {
		close(ss.live.drained)
	}
	go ss.receive(ctx, cancel)

	res := s.exec.Run(ctx, p)
	finish(res, nil)
	s.observe(stream.Context(), req, p, res)
	s.mem.note(req, res)
	// No log line can come after the execution returned.
	ss.live.close()

	// A protocol violation ends the RPC with its status instead of a result.
	if err := context.Cause(ctx); err != nil {
		if _, ok := status.FromError(err); ok && status.Code(err) == codes.InvalidArgument {
			return err
		}
	}
	// Send the live messages still queued (every call's progress and every
	// log line before the result), then the result, waiting at most
	// resultGrace for a client that reads nothing, and drainBudget times
	// that in all for one that reads slowly: returning ends the stream,
	// which unblocks the sends, and the receiver's Recv then fails and it
	// exits. A client that did not read in time learns it from the
	// stream's status: the execution ran, its result was not delivered.
	// A client reading a long queue of log lines as fast as a loaded
	// server sends them is not cut off after resultGrace.
	t := time.NewTimer(s.resultGrace)
	defer t.Stop()
	budget := time.NewTimer(drainBudget * s.resultGrace)
	defer budget.Stop()
drain:
	for {
		select {
		case <-ss.live.drained:
			break drain
		case <-ss.live.sent:
			t.Reset(s.resultGrace)
		case <-t.C:
			return s.undelivered(res)
		case <-budget.C:
			return s.undelivered(res)
		}
	}
	final := &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Result{Result: wire.ResultPB(res)}}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_ = ss.send(stream.Context(), final)
	}()
	select {
	case <-sent:
		return nil
	case <-t.C:
		return s.undelivered(res)
	}
}

// drainBudget bounds, in result graces, how long a Session's end waits
// for a client that reads its queued messages slowly: 60 s by default,
// several times what a reading client takes for the longest queue the log
// limits allow (100,000 lines) on a loaded server.
const drainBudget = 6

// undelivered is the status of a Session whose client did not read its
// result within the grace.
func (s *Server) undelivered(res *core.Result) error {
	return status.Errorf(codes.DeadlineExceeded, "execution %s ended but the client did not read its result within %v; the result was not delivered", res.ExecutionID, s.resultGrace)
}

// send sends one message; it waits for the stream (never longer than ctx)
// while another message is being sent.
func (ss *session) send(ctx context.Context, m *ptcv1.SessionResponse) error {
	select {
	case ss.sendLock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-ss.stream.Context().Done():
		return ss.stream.Context().Err()
	}
	defer func() { <-ss.sendLock }()
	return ss.stream.Send(m)
}

// sendInOrder sends a message the execution waits on (a tool call, an
// approval request) after every log line and progress message the script
// produced before it.
func (ss *session) sendInOrder(ctx context.Context, m *ptcv1.SessionResponse) error {
	if ss.ordered {
		return ss.live.deliver(ctx, m)
	}
	return ss.send(ctx, m)
}

// CallStarted queues the progress of a call that started (the session is
// the execution's core.CallObserver when progress is streamed).
func (ss *session) CallStarted(ctx context.Context, ev *core.CallEvent) context.Context {
	ss.progress(ev)
	return ctx
}

// CallFinished queues the progress of a call that finished.
func (ss *session) CallFinished(_ context.Context, ev *core.CallEvent) { ss.progress(ev) }

// progress queues one progress message; when the client lags, it takes
// the place of the newest one waiting and counts it dropped.
func (ss *session) progress(ev *core.CallEvent) {
	ss.live.offer(ss.progressMessage(ev), progressQueue)
}

func (ss *session) progressMessage(ev *core.CallEvent) *ptcv1.SessionResponse {
	return &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Progress{Progress: wire.ProgressPB(ev, ss.progressValues, 0)}}
}

// receive owns stream.Recv: it routes tool results, handles cancel, and
// ends the execution when the client goes away.
func (ss *session) receive(ctx context.Context, cancel context.CancelCauseFunc) {
	for {
		m, err := ss.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				ss.halfClose(ctx, cancel)
				return
			}
			if status.Code(err) == codes.InvalidArgument {
				// A message that did not decode: the RPC ends with it.
				cancel(err)
				return
			}
			// The client disconnected or the stream ended.
			cancel(errors.New("client disconnected"))
			return
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionRequest_ToolResult:
			ss.deliver(ctx, msg.ToolResult)
		case *ptcv1.SessionRequest_Cancel:
			cancel(fmt.Errorf("cancelled by the client: %s", msg.Cancel.GetReason()))
		case *ptcv1.SessionRequest_ApprovalAnswer:
			ss.decide(ctx, msg.ApprovalAnswer)
		case *ptcv1.SessionRequest_Start:
			cancel(status.Error(codes.InvalidArgument, "a Session takes exactly one start message"))
			return
		default:
			ss.protocolError(ctx, "", "unknown message type")
		}
	}
}

// halfClose fails every pending client call and approval: no answer can
// arrive now. Calls made from now on are refused. When some are pending,
// it first waits up to halfCloseGrace for the RPC to end: a client that
// drops its RPC may half-close it first, and a dropped RPC cancels the
// execution (as receive does) rather than failing its calls.
func (ss *session) halfClose(ctx context.Context, cancel context.CancelCauseFunc) {
	ss.mu.Lock()
	ss.closed = true
	waiting := len(ss.pending) + len(ss.approvals)
	ss.mu.Unlock()
	if waiting > 0 {
		t := time.NewTimer(ss.halfCloseGrace)
		defer t.Stop()
		select {
		case <-ss.stream.Context().Done():
			cancel(errors.New("client disconnected"))
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, ch := range ss.pending {
		ch <- wire.ToolResultPB(id, nil, tools.Errorf(tools.CodeClientGone, "the client closed its stream before answering"))
		delete(ss.pending, id)
	}
	for id, ch := range ss.approvals {
		ch <- &ptcv1.Approval{Reason: "the client closed its stream before deciding"}
		delete(ss.approvals, id)
	}
}

func (ss *session) deliver(ctx context.Context, r *ptcv1.ToolResult) {
	id := r.GetCallId()
	ss.mu.Lock()
	ch, ok := ss.pending[id]
	if ok {
		delete(ss.pending, id)
		ss.answered[id] = true
	}
	repeated := ss.answered[id] && !ok
	ss.mu.Unlock()
	switch {
	case ok:
		ch <- r // buffered, one result per call
	case repeated:
		ss.protocolError(ctx, id, fmt.Sprintf("call_id %q was already answered; the repeated result is ignored", core.Clip(id, core.QuotedBytes)))
	default:
		ss.protocolError(ctx, id, fmt.Sprintf("unknown call_id %q; the result is ignored", core.Clip(id, core.QuotedBytes)))
	}
}

func (ss *session) protocolError(ctx context.Context, id, msg string) {
	// The call_id goes back cut: ptcd's own ids are short, and a caller's
	// megabytes of id would otherwise come back whole.
	m := &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_ProtocolError{ProtocolError: &ptcv1.ProtocolError{CallId: core.Clip(id, maxEchoedCallID), Message: msg}}}
	_ = ss.send(ctx, m)
}

// forward is the handler of every client tool: it sends a ToolCall and
// waits for the matching ToolResult.
func (ss *session) forward(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	ch := make(chan *ptcv1.ToolResult, 1)
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil, tools.Errorf(tools.CodeClientGone, "the client closed its stream; client tools can no longer be called")
	}
	ss.nextID++
	id := "c" + strconv.FormatInt(ss.nextID, 10)
	ss.pending[id] = ch
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.pending, id)
		ss.mu.Unlock()
	}()

	dl, _ := ctx.Deadline()
	tp, ts := telemetry.CallTraceContext(ctx)
	tc := wire.ToolCallPB(id, call, dl, tp, ts)
	if err := ss.sendInOrder(ctx, &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_ToolCall{ToolCall: tc}}); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, tools.Errorf(tools.CodeClientGone, "the stream to the client failed; the call was not sent")
	}
	select {
	case r := <-ch:
		return wire.ToolResultFromPB(r)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// approve asks the client to approve one call (the execution's
// approver): it sends an ApprovalRequest and waits for the answer.
func (ss *session) approve(ctx context.Context, a core.Action) (bool, string) {
	id := "a" + strconv.Itoa(int(a.Seq))
	a.CallID = id
	ch := make(chan *ptcv1.Approval, 1)
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return false, "the client closed its stream; no call can be approved"
	}
	ss.approvals[id] = ch
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.approvals, id)
		ss.mu.Unlock()
	}()
	dl, _ := ctx.Deadline()
	m := &ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_ApprovalRequest{ApprovalRequest: wire.ApprovalRequestPB(a, dl)}}
	if err := ss.sendInOrder(ctx, m); err != nil {
		return false, "the approval request could not be sent to the client"
	}
	select {
	case d := <-ch:
		return d.GetApproved(), d.GetReason()
	case <-ctx.Done():
		return false, "the execution ended while waiting for approval"
	}
}

// decide routes the client's answer to an approval request. Only an
// unambiguous yes (wire.Decision) approves; an answer to a waiting call
// that holds no approval denies it (and the client is told why), so that
// no answer leaves the call waiting or runs it.
func (ss *session) decide(ctx context.Context, a *ptcv1.ActionAnswer) {
	id := a.GetCallId()
	ok, why, isApproval := wire.Decision(a)
	if !isApproval {
		why = "the approval answer held no approval"
	}
	// A reason over the bound is cut, as the clients cut it: the call is
	// decided either way.
	d := &ptcv1.Approval{Approved: ok, Reason: executor.CutReason(why)}
	ss.mu.Lock()
	ch, waiting := ss.approvals[id]
	delete(ss.approvals, id)
	ss.mu.Unlock()
	switch {
	case !waiting:
		ss.protocolError(ctx, id, fmt.Sprintf("no call waits for approval under %q (unknown, or answered already); the answer is ignored", core.Clip(id, core.QuotedBytes)))
	case !isApproval:
		// Told before the call goes on, so the error comes before the result.
		ss.protocolError(ctx, id, fmt.Sprintf("approval_answer for %q holds no approval; the call is denied", core.Clip(id, core.QuotedBytes)))
		ch <- d
	default:
		ch <- d
	}
}
