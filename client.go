package ptc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ptcrun/ptc/internal/wire"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// Client talks to a ptcd server. It is safe for concurrent use.
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
		return nil, fmt.Errorf("ptc: dial %s: %w", target, err)
	}
	return &Client{conn: conn, rpc: ptcv1.NewRunnerServiceClient(conn)}, nil
}

// NewClient wraps an existing connection.
func NewClient(conn *grpc.ClientConn) *Client {
	return &Client{conn: conn, rpc: ptcv1.NewRunnerServiceClient(conn)}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Tools lists the server's tools.
func (c *Client) Tools(ctx context.Context) ([]Definition, error) {
	res, err := c.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]Definition, 0, len(res.GetTools()))
	for _, d := range res.GetTools() {
		out = append(out, wire.DefinitionFromPB(d))
	}
	return out, nil
}

// Execute runs a script against the server's tools (unary RPC). Request
// errors come back as gRPC status errors; script failures as Result.Error.
// Request.ClientTools and OnLog need Run.
func (c *Client) Execute(ctx context.Context, req Request) (*Result, error) {
	if len(req.ClientTools) > 0 {
		return nil, errors.New("ptc: client tools need Client.Run (a Session stream)")
	}
	res, err := c.rpc.Execute(ctx, requestPB(req))
	if err != nil {
		return nil, err
	}
	return resultFromPB(res), nil
}

// Run runs a script over a Session stream, serving clientTools (and any in
// req.ClientTools) from this process: the server sends each call of the
// script to a client tool back here, the handler runs on its own goroutine
// (or, for a Tool marked Inline, on the stream's goroutine, so calls to it
// are served one at a time), and its result goes back into the running
// script. A panicking handler becomes a tool error. Log lines stream to
// req.OnLog when it is set.
func (c *Client) Run(ctx context.Context, req Request, clientTools ...Tool) (*Result, error) {
	all := append(append([]Tool(nil), req.ClientTools...), clientTools...)
	handlers := make(map[string]Handler, len(all))
	inline := map[string]bool{}
	start := &ptcv1.SessionStart{Execute: requestPB(req)}
	start.Execute.StreamLogs = req.OnLog != nil
	for _, t := range all {
		if t.Handler == nil {
			return nil, fmt.Errorf("ptc: client tool %q has no handler", t.Name)
		}
		handlers[t.Name] = t.Handler
		inline[t.Name] = t.Inline
		start.ClientTools = append(start.ClientTools, wire.DefinitionPB(t.Definition))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Session(ctx)
	if err != nil {
		return nil, err
	}
	var sendMu sync.Mutex
	send := func(m *ptcv1.SessionRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	if err := send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: start}}); err != nil {
		return nil, recvStatus(stream, err)
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
				return nil, errors.New("ptc: the server closed the session without a result")
			}
			return nil, err
		}
		switch msg := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_Result:
			return resultFromPB(msg.Result), nil
		case *ptcv1.SessionResponse_Log:
			if req.OnLog != nil {
				req.OnLog(wire.LogFromPB(msg.Log))
			}
		case *ptcv1.SessionResponse_ProtocolError:
			// Only a client that broke the protocol gets one; ignore.
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
			go func() {
				defer wg.Done()
				out := serveCall(ctx, h, tc)
				_ = send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: out}})
			}()
		}
	}
}

// serveCall runs one client tool handler, turning errors and panics into
// a ToolResult.
func serveCall(ctx context.Context, h Handler, tc *ptcv1.ToolCall) (res *ptcv1.ToolResult) {
	res = &ptcv1.ToolResult{CallId: tc.GetCallId()}
	fail := func(code, msg string) {
		res.Outcome = &ptcv1.ToolResult_Error{Error: &ptcv1.ToolError{Code: code, Message: msg}}
	}
	if h == nil {
		fail("unknown_tool", fmt.Sprintf("this client does not serve tool %q", tc.GetTool()))
		return res
	}
	if dl := tc.GetDeadline(); dl != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.AsTime())
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			fail("tool_panic", fmt.Sprintf("the tool failed unexpectedly: %v", p))
		}
	}()
	out, err := h(ctx, tools.Call{Tool: tc.GetTool(), Arguments: json.RawMessage(tc.GetArgumentsJson()), IdempotencyKey: tc.GetIdempotencyKey()})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			fail(te.Code, te.Message)
		} else {
			fail("tool_failed", err.Error())
		}
		return res
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	res.Outcome = &ptcv1.ToolResult_OutputJson{OutputJson: string(out)}
	return res
}

// recvStatus returns the stream's final status after a failed send.
func recvStatus(stream ptcv1.RunnerService_SessionClient, sendErr error) error {
	if _, err := stream.Recv(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return sendErr
}

func requestPB(r Request) *ptcv1.ExecuteRequest {
	lang := r.Language
	if lang == LanguageUnspecified {
		lang = LanguageJavaScript
	}
	return &ptcv1.ExecuteRequest{
		Script: &ptcv1.Script{
			Language:     ptcv1.Language(lang),
			Source:       r.Source,
			WasmModule:   r.Module,
			ModuleSha256: r.ModuleSHA256,
		},
		InputJson:          string(r.Input),
		Limits:             wire.LimitsPB(r.Limits),
		AllowedTools:       r.AllowedTools,
		ResultSchemaJson:   string(r.ResultSchema),
		ExecutionId:        r.ExecutionID,
		IncludeToolResults: r.IncludeToolResults,
		Deterministic:      r.Deterministic,
		Seed:               r.Seed,
		ClockStart:         clockPB(r.ClockStart),
	}
}

func clockPB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func resultFromPB(r *ptcv1.ExecuteResponse) *Result {
	out := &Result{
		ExecutionID:   r.GetExecutionId(),
		Error:         wire.ErrorFromPB(r.GetError()),
		ModelMessage:  r.GetModelMessage(),
		LogsTruncated: r.GetLogsTruncated(),
	}
	if r.GetError() == nil {
		out.Result = json.RawMessage(r.GetResultJson())
	}
	if l, err := wire.LimitsFromPB(r.GetEffectiveLimits()); err == nil {
		out.EffectiveLimits = l
	}
	st := r.GetStats()
	out.Stats = Stats{
		Duration:        st.GetDuration().AsDuration(),
		CPUTime:         st.GetCpuTime().AsDuration(),
		QueueTime:       st.GetQueueTime().AsDuration(),
		PeakMemoryBytes: st.GetPeakMemoryBytes(),
		ToolCalls:       st.GetToolCalls(),
		ToolResultBytes: st.GetToolResultBytes(),
		OutputBytes:     st.GetOutputBytes(),
		LogBytes:        st.GetLogBytes(),
	}
	for _, l := range r.GetLogs() {
		out.Logs = append(out.Logs, wire.LogFromPB(l))
	}
	for _, t := range r.GetTrace() {
		out.Trace = append(out.Trace, wire.RecordFromPB(t))
	}
	return out
}
