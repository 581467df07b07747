package wire

import (
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// DefinitionPB converts a tool definition.
func DefinitionPB(d tools.Definition) *ptcv1.ToolDefinition {
	return &ptcv1.ToolDefinition{
		Name:             d.Name,
		Description:      d.Description,
		InputSchemaJson:  string(d.InputSchema),
		OutputSchemaJson: string(d.OutputSchema),
		RequiresApproval: d.RequiresApproval,
	}
}

// DefinitionFromPB converts a tool definition.
func DefinitionFromPB(d *ptcv1.ToolDefinition) tools.Definition {
	return tools.Definition{
		Name:             d.GetName(),
		Description:      d.GetDescription(),
		InputSchema:      rawOrNil(d.GetInputSchemaJson()),
		OutputSchema:     rawOrNil(d.GetOutputSchemaJson()),
		RequiresApproval: d.GetRequiresApproval(),
	}
}

// ToolCallPB is the Session ToolCall of a client tool call numbered id,
// with the W3C trace context of its span (empty strings for none).
func ToolCallPB(id string, call tools.Call, deadline time.Time, traceparent, tracestate string) *ptcv1.ToolCall {
	tc := &ptcv1.ToolCall{CallId: id, Tool: text(call.Tool), ArgumentsJson: jsonText(call.Arguments), IdempotencyKey: call.IdempotencyKey,
		Traceparent: traceparent, Tracestate: tracestate}
	if !deadline.IsZero() {
		tc.Deadline = timestamppb.New(deadline)
	}
	return tc
}

// CallFromPB is the call a Session client serves for a ToolCall, and its
// deadline (zero when none).
func CallFromPB(tc *ptcv1.ToolCall) (tools.Call, time.Time) {
	call := tools.Call{Tool: tc.GetTool(), Arguments: json.RawMessage(tc.GetArgumentsJson()), IdempotencyKey: tc.GetIdempotencyKey()}
	var deadline time.Time
	if dl := tc.GetDeadline(); dl != nil && dl.CheckValid() == nil {
		deadline = dl.AsTime()
	}
	return call, deadline
}

// ToolResultPB is a Session client's answer to call id: the handler's
// output (null when empty), or its error — a *tools.Error keeps its code,
// any other error is tools.CodeToolFailed.
func ToolResultPB(id string, out json.RawMessage, err error) *ptcv1.ToolResult {
	res := &ptcv1.ToolResult{CallId: id}
	if err != nil {
		te := &tools.Error{Code: tools.CodeToolFailed, Message: err.Error()}
		errors.As(err, &te)
		res.Outcome = &ptcv1.ToolResult_Error{Error: &ptcv1.ToolError{Code: text(te.Code), Message: text(te.Message)}}
		return res
	}
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	res.Outcome = &ptcv1.ToolResult_OutputJson{OutputJson: jsonText(out)}
	return res
}

// ToolResultFromPB is the outcome of a client tool call as its handler on
// the server returns it: the output JSON, or a *tools.Error (an empty code
// is tools.CodeToolFailed; a result with neither output nor error is
// tools.CodeInvalidOutput).
func ToolResultFromPB(r *ptcv1.ToolResult) (json.RawMessage, error) {
	if e := r.GetError(); e != nil {
		code := e.GetCode()
		if code == "" {
			code = tools.CodeToolFailed
		}
		return nil, &tools.Error{Code: code, Message: e.GetMessage()}
	}
	if _, ok := r.GetOutcome().(*ptcv1.ToolResult_OutputJson); !ok {
		return nil, &tools.Error{Code: tools.CodeInvalidOutput, Message: "the client's result has neither output_json nor error"}
	}
	return json.RawMessage(r.GetOutputJson()), nil
}

// ToolQueryFromPB converts a ListToolsRequest.
func ToolQueryFromPB(in *ptcv1.ListToolsRequest) core.ToolQuery {
	return core.ToolQuery{Query: in.GetQuery(), Limit: int(in.GetLimit()), Names: in.GetNames(), TypeScript: in.GetIncludeTypescript(), Language: core.Language(in.GetLanguage())}
}

// ToolQueryPB converts a tool query; a limit beyond int32 is refused.
func ToolQueryPB(q core.ToolQuery) (*ptcv1.ListToolsRequest, *fault.Error) {
	if q.Limit > 1<<31-1 || q.Limit < -1<<31 {
		return nil, fault.Reject(fault.CodeInvalidArgument, "limit %d is out of range", q.Limit)
	}
	return &ptcv1.ListToolsRequest{Query: q.Query, Limit: int32(q.Limit), Names: q.Names, IncludeTypescript: q.TypeScript, Language: ptcv1.Language(q.Language)}, nil
}

// ToolListPB converts a ListTools answer.
func ToolListPB(l *core.ToolList) *ptcv1.ListToolsResponse {
	out := &ptcv1.ListToolsResponse{Typescript: l.TypeScript, Prompt: l.Prompt, ApproxTokens: int32(min(l.ApproxTokens, 1<<31-1))}
	for _, d := range l.Tools {
		out.Tools = append(out.Tools, DefinitionPB(d))
	}
	for _, m := range l.Matches {
		out.Matches = append(out.Matches, &ptcv1.ToolMatch{Name: m.Name, Score: float32(m.Score)})
	}
	return out
}

// ToolListFromPB converts a ListTools answer.
func ToolListFromPB(r *ptcv1.ListToolsResponse) *core.ToolList {
	out := &core.ToolList{TypeScript: r.GetTypescript(), Prompt: r.GetPrompt(), ApproxTokens: int(r.GetApproxTokens())}
	for _, d := range r.GetTools() {
		out.Tools = append(out.Tools, DefinitionFromPB(d))
	}
	for _, m := range r.GetMatches() {
		out.Matches = append(out.Matches, core.ToolMatch{Name: m.GetName(), Score: float64(m.GetScore())})
	}
	return out
}
