package ptcv1_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// sessionEcho is a toy RunnerService used only by the examples: instead of
// running the program, its Session calls the first client tool once and
// returns that tool's output as the result. It shows the message flow a real
// server (ptcd) follows.
type sessionEcho struct {
	ptcv1.UnimplementedRunnerServiceServer
}

func (sessionEcho) Session(stream ptcv1.RunnerService_SessionServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil || len(start.GetClientTools()) == 0 {
		return status.Error(codes.InvalidArgument, "the first message must be a start with at least one client tool")
	}
	call := &ptcv1.ToolCall{
		CallId:        "call-1",
		Tool:          start.GetClientTools()[0].GetName(),
		ArgumentsJson: start.GetExecute().GetInputJson(),
	}
	if err := stream.Send(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_ToolCall{ToolCall: call}}); err != nil {
		return err
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		res := msg.GetToolResult()
		if res == nil {
			continue
		}
		if res.GetCallId() != call.GetCallId() {
			perr := &ptcv1.ProtocolError{CallId: res.GetCallId(), Message: "unknown call_id"}
			if err := stream.Send(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_ProtocolError{ProtocolError: perr}}); err != nil {
				return err
			}
			continue
		}
		out := &ptcv1.ExecuteResponse{
			ExecutionId: "exec-1",
			ResultJson:  res.GetOutputJson(),
			Stats:       &ptcv1.ExecutionStats{ToolCalls: 1, OutputBytes: int64(len(res.GetOutputJson()))},
		}
		return stream.Send(&ptcv1.SessionResponse{Msg: &ptcv1.SessionResponse_Result{Result: out}})
	}
}

// dialExample starts srv on an in-memory listener and returns a client
// connected to it, and a function that closes both.
func dialExample(srv ptcv1.RunnerServiceServer) (*grpc.ClientConn, func()) {
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(s, srv)
	// The server goroutine ends when s.Stop closes the listener.
	go func() { _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///ptcd",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	return conn, func() { _ = conn.Close(); s.Stop() }
}

// This example builds the request for a JavaScript program that calls one
// server tool, with a tighter timeout than the server's default.
func ExampleExecuteRequest() {
	req := &ptcv1.ExecuteRequest{
		Script: &ptcv1.Script{
			Language: ptcv1.Language_LANGUAGE_JAVASCRIPT,
			Source:   `const r = await tools.weather({city: input.city}); return {temp: r.temp};`,
		},
		InputJson:        `{"city":"Oslo"}`,
		AllowedTools:     []string{"weather"},
		Limits:           &ptcv1.Limits{Timeout: durationpb.New(5 * time.Second), MaxToolCalls: 10},
		ResultSchemaJson: `{"type":"object","required":["temp"]}`,
	}
	fmt.Println(req.GetScript().GetLanguage(), req.GetLimits().GetTimeout().AsDuration())
	// Output: LANGUAGE_JAVASCRIPT 5s
}

// This example drives a Session as a caller that serves one tool itself: it
// starts the execution, answers each ToolCall with a ToolResult of the same
// call_id, and reads until the final ExecuteResponse.
func ExampleRunnerServiceClient_session() {
	conn, closeAll := dialExample(sessionEcho{})
	defer closeAll()
	client := ptcv1.NewRunnerServiceClient(conn)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.Session(ctx)
	if err != nil {
		log.Fatal(err)
	}
	start := &ptcv1.SessionStart{
		Execute: &ptcv1.ExecuteRequest{
			Script:    &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_JAVASCRIPT, Source: `return await tools.lookup(input);`},
			InputJson: `{"id":7}`,
		},
		ClientTools: []*ptcv1.ToolDefinition{{
			Name:            "lookup",
			Description:     "Look up a record by id.",
			InputSchemaJson: `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`,
		}},
	}
	if err := stream.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: start}}); err != nil {
		log.Fatal(err)
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		switch m := msg.GetMsg().(type) {
		case *ptcv1.SessionResponse_ToolCall:
			fmt.Printf("tool call %s: %s(%s)\n", m.ToolCall.GetCallId(), m.ToolCall.GetTool(), m.ToolCall.GetArgumentsJson())
			res := &ptcv1.ToolResult{
				CallId:  m.ToolCall.GetCallId(),
				Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: `{"id":7,"name":"Ada"}`},
			}
			if err := stream.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: res}}); err != nil {
				log.Fatal(err)
			}
		case *ptcv1.SessionResponse_Log:
			fmt.Println("log:", m.Log.GetMessage())
		case *ptcv1.SessionResponse_ProtocolError:
			fmt.Println("protocol error:", m.ProtocolError.GetMessage())
		case *ptcv1.SessionResponse_Result:
			if e := m.Result.GetError(); e != nil {
				fmt.Println("failed:", e.GetKind(), m.Result.GetModelMessage())
			} else {
				fmt.Println("result:", m.Result.GetResultJson())
			}
			_ = stream.CloseSend()
		}
	}
	// Output:
	// tool call call-1: lookup({"id":7})
	// result: {"id":7,"name":"Ada"}
}
