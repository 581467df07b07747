package ptc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// Client talks to a ptcd server. It is safe for concurrent use. Its
// request errors are *Error values with the server's status code (and
// RetryAfter from its RetryInfo), as the Runner's are.
type Client struct {
	conn *grpc.ClientConn
	rpc  ptcv1.RunnerServiceClient
}

// Dial connects to a ptcd server at target (e.g. "127.0.0.1:7878"). Without
// options the connection is plaintext; pass grpc.WithTransportCredentials
// (and per-RPC credentials for bearer tokens) for a secured server.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, &Error{Code: InvalidArgument, Message: fmt.Sprintf("dial %s: %v", target, err), cause: err}
	}
	return &Client{conn: conn, rpc: ptcv1.NewRunnerServiceClient(conn)}, nil
}

// NewClient wraps an existing connection.
func NewClient(conn *grpc.ClientConn) *Client {
	return &Client{conn: conn, rpc: ptcv1.NewRunnerServiceClient(conn)}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// remoteError converts an RPC's error into an *Error. When the caller's
// context ended, its error is in the chain too, so errors.Is(err,
// context.Canceled) holds.
func remoteError(ctx context.Context, err error) error {
	e := errorOf(wire.ErrorFromStatus(err))
	if ctx.Err() != nil {
		e.cause = errors.Join(ctx.Err(), e.cause)
	}
	return e
}

// Tools lists the server's tools (those the caller's tenant may use).
func (c *Client) Tools(ctx context.Context) ([]tools.Definition, error) {
	l, err := c.ListTools(ctx, ToolQuery{})
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

// ListTools describes the server's tools: all, the named ones or the most
// relevant to a query, with TypeScript declarations when asked, the
// model-facing prompt, a token estimate and the relevance scores.
func (c *Client) ListTools(ctx context.Context, q ToolQuery) (*ToolList, error) {
	in, ferr := wire.ToolQueryPB(toolQueryCore(q))
	if ferr != nil {
		return nil, errorOf(ferr)
	}
	res, err := c.rpc.ListTools(ctx, in)
	if err != nil {
		return nil, remoteError(ctx, err)
	}
	return toolListOf(wire.ToolListFromPB(res)), nil
}

// Execute runs a script against the server's tools (unary RPC). Script
// failures come back as Result.Error. A resumable request
// (Request.Resumable) may come back paused, its ClientTools (served by
// the caller: their handlers are not used) and approvals pending; Resume
// goes on. Otherwise ClientTools, OnLog, OnProgress and Approve need Run.
//
// The Client makes up an ExecutionID when the request has none. If the
// connection drops once the request could have reached the server, the
// error is a *ConnectionLostError naming the execution (its outcome is
// unknown), not a plain Unavailable, which means the server was never
// reached; repeating the request with that ExecutionID is safe (ptcd
// returns the outcome instead of running it again).
func (c *Client) Execute(ctx context.Context, req Request) (*Result, error) {
	if len(req.ClientTools) > 0 && !req.Resumable {
		return nil, &Error{Code: InvalidArgument, Message: "client tools need Client.Run (a Session stream), or a resumable request"}
	}
	if req.ExecutionID == "" {
		req.ExecutionID = newExecutionID()
	}
	// The peer is known once the request went out on a connection: from
	// then on, a dropped connection leaves the outcome unknown.
	var p peer.Peer
	res, err := c.rpc.Execute(ctx, wire.RequestPB(requestCore(req)), grpc.Peer(&p))
	if err != nil {
		return nil, lostError(ctx, err, p.Addr != nil, req.ExecutionID, nil)
	}
	return resultOf(wire.ResultFromPB(res)), nil
}

// Resume goes on with a paused execution (Result.RequiresAction) on the
// server, or on any server that shares its continuation keys: the
// continuation and one answer per pending action. It returns the
// execution's next state; errors are as Runner.Resume's.
//
// Retrying with the same continuation and the same answers is safe — after
// a deadline, a cancellation or a dropped connection, on the same server
// or another one sharing its store: the execution went on without the
// call, nothing runs twice, and the retry returns the same next state (the
// same new continuation) while the server keeps it (durable.outcome_retention,
// 10 minutes by default). A retry that reaches another replica while the
// execution still runs there is Unavailable with reason RESUME_IN_PROGRESS:
// retry it again shortly. docs/durable.md has the cases.
func (c *Client) Resume(ctx context.Context, continuation string, answers ...Answer) (*Result, error) {
	as := answersCore(answers)
	for i, a := range as {
		// The wire holds one outcome per answer: an answer with more
		// would reach the server as one of them (an approval, say).
		if !executor.OneOutcome(a) {
			return nil, &Error{Code: InvalidArgument, Message: fmt.Sprintf("answers[%d] (call_id %q): give exactly one of output, error and an approval decision (Approve or Deny)", i, a.CallID)}
		}
	}
	res, err := c.rpc.Resume(ctx, wire.ResumePB(continuation, as, nil))
	if err != nil {
		return nil, remoteError(ctx, err)
	}
	return resultOf(wire.ResultFromPB(res.GetExecution())), nil
}

// Run runs a script over a Session stream, serving clientTools (and any in
// req.ClientTools) from this process: the server sends each call of the
// script to a client tool back here, the handler runs on its own goroutine
// (or, for a Tool marked Inline, on the stream's goroutine, so calls to it
// are served one at a time), and its result goes back into the running
// script. A panicking handler becomes a tool error. Log lines stream to
// req.OnLog and tool call progress to req.OnProgress when they are set.
// Calls that need approval are decided by req.Approve (denied without
// it). When the server traces the call, the context a handler (or
// req.Approve) gets carries the W3C trace context of the call's
// "execute_tool" span as its remote parent, so an OpenTelemetry-
// instrumented handler's spans are children of the call's span. A
// resumable request is refused: a Session holds its stream instead of
// pausing. If the connection drops once the server answered anything, or
// the server ends the stream without a result, the error is a
// *ConnectionLostError listing the tool calls known to have started (Run
// always asks for progress; OnProgress sees it only when set).
func (c *Client) Run(ctx context.Context, req Request, clientTools ...tools.Tool) (*Result, error) {
	if req.Resumable {
		return nil, &Error{Code: InvalidArgument, Message: "a resumable request runs with Client.Execute (Run holds a stream and never pauses)"}
	}
	if req.ExecutionID == "" {
		req.ExecutionID = newExecutionID()
	}
	all := append(append([]tools.Tool(nil), req.ClientTools...), clientTools...)
	handlers := make(map[string]tools.Handler, len(all))
	inline := map[string]bool{}
	start := &ptcv1.SessionStart{Execute: wire.RequestPB(requestCore(req))}
	// Progress is always asked for, so that the calls that started are
	// known if the connection drops; OnProgress sees it only when set.
	start.Execute.StreamProgress = true
	var started startedCalls
	// heard: the server answered something, so the execution started.
	heard := false
	for _, t := range all {
		if t.Handler == nil {
			return nil, &Error{Code: InvalidArgument, Message: fmt.Sprintf("client tool %q has no handler", t.Name)}
		}
		handlers[t.Name] = t.Handler
		inline[t.Name] = t.Inline
		start.ClientTools = append(start.ClientTools, wire.DefinitionPB(t.Definition))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Session(ctx)
	if err != nil {
		return nil, remoteError(ctx, err)
	}
	var sendMu sync.Mutex
	send := func(m *ptcv1.SessionRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: start}}); err != nil {
		return nil, remoteError(ctx, recvStatus(stream, err))
	}

	// Handler goroutines end when they return; ctx (cancelled when Run
	// returns) tells them to stop early. wg makes Run wait for them.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for {
		m, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, started.lost(req.ExecutionID, &Error{Code: Unavailable, Message: "the server closed the session without a result"})
			}
			return nil, lostError(ctx, err, heard, req.ExecutionID, &started)
		}
		heard = true
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_Result:
			return resultOf(wire.ResultFromPB(msg.Result)), nil
		case *ptcv1.SessionResponse_Log:
			if req.OnLog != nil {
				req.OnLog(LogEntry(wire.LogFromPB(msg.Log)))
			}
		case *ptcv1.SessionResponse_Progress:
			ev, args, res, dropped := wire.ProgressFromPB(msg.Progress)
			pe := progressOf(&ev, args, res, dropped, req.ProgressValues)
			started.heard(pe)
			if req.OnProgress != nil {
				req.OnProgress(pe)
			}
		case *ptcv1.SessionResponse_ProtocolError:
			// Only a client that broke the protocol gets one; ignore.
		case *ptcv1.SessionResponse_ApprovalRequest:
			// Decided on its own goroutine: the callback may take time.
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := wire.ActionFromPB(msg.ApprovalRequest.GetAction())
				ok, why := false, "this client has no approval callback (Request.Approve)"
				if req.Approve != nil {
					ok, why = decide(withTraceContext(ctx, a.Traceparent, a.Tracestate), req.Approve, actionOf(a))
				}
				ans := wire.AnswerPB(core.Answer{CallID: a.CallID, Approve: ok, Deny: !ok, Reason: executor.CutReason(why)})
				_ = send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ApprovalAnswer{ApprovalAnswer: ans}})
			}()
		case *ptcv1.SessionResponse_ToolCall:
			tc := msg.ToolCall
			h := handlers[tc.GetTool()]
			if inline[tc.GetTool()] {
				// Inline tools run right here: no goroutine hand-off, but
				// the next message waits until they return.
				_ = send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: serveCall(ctx, h, tc)}})
				continue
			}
			wg.Add(1)
			started.serving(1)
			go func() {
				defer wg.Done()
				defer started.serving(-1)
				out := serveCall(ctx, h, tc)
				_ = send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: out}})
			}()
		}
	}
}

// serveCall runs one client tool handler, turning errors and panics into
// a ToolResult.
func serveCall(ctx context.Context, h tools.Handler, tc *ptcv1.ToolCall) (res *ptcv1.ToolResult) {
	if h == nil {
		return wire.ToolResultPB(tc.GetCallId(), nil, tools.Errorf(tools.CodeUnknownTool, "this client does not serve tool %q", tc.GetTool()))
	}
	call, deadline := wire.CallFromPB(tc)
	ctx = withTraceContext(ctx, tc.GetTraceparent(), tc.GetTracestate())
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = wire.ToolResultPB(tc.GetCallId(), nil, tools.Errorf(tools.CodePanic, "the tool failed unexpectedly: %v", p))
		}
	}()
	out, err := h(ctx, call)
	return wire.ToolResultPB(tc.GetCallId(), out, err)
}

// withTraceContext is ctx carrying the W3C trace context of a call's span
// on the server as its remote parent, so that the spans an instrumented
// handler starts from it are children of the call's; ctx itself when the
// server sent none (or an invalid one).
func withTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		carrier["tracestate"] = tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// recvStatus returns the stream's final status after a failed send.
func recvStatus(stream ptcv1.RunnerService_SessionClient, sendErr error) error {
	if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return sendErr
}
