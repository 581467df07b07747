package adversarial

import (
	"context"
	"errors"
	"fmt"
	"io"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// sess is the caller's side of one Session.
type sess struct {
	st ptcv1.RunnerService_SessionClient
}

// openSession starts a Session running exec with client tools.
func openSession(ctx context.Context, c ptcv1.RunnerServiceClient, exec *ptcv1.ExecuteRequest, clientTools ...*ptcv1.ToolDefinition) (*sess, error) {
	st, err := c.Session(ctx)
	if err != nil {
		return nil, err
	}
	s := &sess{st: st}
	return s, s.send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Start{Start: &ptcv1.SessionStart{Execute: exec, ClientTools: clientTools}}})
}

func (s *sess) send(m *ptcv1.SessionRequest) error { return s.st.Send(m) }

// answer sends a tool result.
func (s *sess) answer(id, outputJSON string) error {
	return s.send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: id, Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: outputJSON}}}})
}

// answerError sends a tool error.
func (s *sess) answerError(id, code, message string) error {
	return s.send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{CallId: id, Outcome: &ptcv1.ToolResult_Error{Error: &ptcv1.ToolError{Code: code, Message: message}}}}})
}

// cancel sends a CancelExecution.
func (s *sess) cancel(reason string) error {
	return s.send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_Cancel{Cancel: &ptcv1.CancelExecution{Reason: reason}}})
}

// transcript is what the server sent on a Session.
type transcript struct {
	calls     []*ptcv1.ToolCall
	logs      []*ptcv1.LogEntry
	protoErrs []*ptcv1.ProtocolError
	afterEnd  int // messages after the result (must be none)
}

// serve reads the stream until the result, calling onCall for each tool
// call (nil: calls go unanswered). It returns the result, what came
// before it, and the RPC's error if the stream ended otherwise.
func (s *sess) serve(onCall func(*ptcv1.ToolCall) error) (*ptcv1.ExecuteResponse, *transcript, error) {
	tr := &transcript{}
	for {
		m, err := s.st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream ended without a result")
			}
			return nil, tr, err
		}
		switch v := m.GetMsg().(type) {
		case *ptcv1.SessionResponse_ToolCall:
			tr.calls = append(tr.calls, v.ToolCall)
			if onCall != nil {
				// io.EOF from Send: the server ended the stream (it may
				// have answered already, as after the first of two
				// answers to one call); what it sent comes from Recv.
				if err := onCall(v.ToolCall); err != nil && !errors.Is(err, io.EOF) {
					return nil, tr, fmt.Errorf("answering %s: %w", v.ToolCall.GetCallId(), err)
				}
			}
		case *ptcv1.SessionResponse_Log:
			tr.logs = append(tr.logs, v.Log)
		case *ptcv1.SessionResponse_ProtocolError:
			tr.protoErrs = append(tr.protoErrs, v.ProtocolError)
		case *ptcv1.SessionResponse_Result:
			// The result is the last message: the stream must end.
			for {
				if _, err := s.st.Recv(); err != nil {
					break
				}
				tr.afterEnd++
			}
			return v.Result, tr, nil
		}
	}
}

// tool is a client tool definition.
func tool(name, input, output string) *ptcv1.ToolDefinition {
	return &ptcv1.ToolDefinition{Name: name, Description: "a client tool", InputSchemaJson: input, OutputSchemaJson: output}
}
