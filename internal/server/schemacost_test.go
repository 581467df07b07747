package server_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// costlySchema is an object schema whose property "a" is 40 levels of
// anyOf over two $refs: a value of "a" that is not a string takes 2^40
// steps to refuse, unless the check is bounded.
func costlySchema() string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"a":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	b.WriteString(`"d40":{"type":"string"}}}`)
	return b.String()
}

// TestCallerSchemasBounded: the JSON Schemas a caller sends are checked
// in ptcd within a bound, and what their checks cannot do is a
// classified error: a schema that makes a check cost 2^40 steps, a number
// the checker cannot compare (which stopped ptcd before), a schema too
// deep to compile quickly. ptcd keeps serving.
func TestCallerSchemasBounded(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	t.Run("result schema", func(t *testing.T) {
		req := jsReq(`return {a: 1}`)
		req.ResultSchemaJson = costlySchema()
		res, err := f.rpc.Execute(ctx, req)
		if err != nil || res.GetError().GetKind() != ptcv1.ErrorKind_ERROR_KIND_RESULT_SCHEMA_VIOLATION ||
			!strings.Contains(res.GetError().GetMessage(), "could not be checked") {
			t.Fatalf("%v %v", err, res)
		}
	})
	t.Run("schema too deep", func(t *testing.T) {
		req := jsReq(`return 1`)
		req.ResultSchemaJson = strings.Repeat(`{"not":`, 5000) + `{}` + strings.Repeat(`}`, 5000)
		_, err := f.rpc.Execute(ctx, req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "nested more than") {
			t.Fatalf("%v", err)
		}
	})
	// A client tool's schemas: the script's arguments against the input
	// schema, the client's answers against the output schema.
	for _, tc := range []struct {
		name, script, answer string
		def                  *ptcv1.ToolDefinition
		want                 string
	}{
		{"input schema", `try { await tools.c({a: 1}) } catch (e) { return e.code + ": " + e.message }`, "",
			&ptcv1.ToolDefinition{Name: "c", InputSchemaJson: costlySchema()}, "invalid_arguments: arguments could not be checked"},
		{"output schema", `try { await tools.c({}) } catch (e) { return e.code + ": " + e.message }`, `{"a":1}`,
			&ptcv1.ToolDefinition{Name: "c", OutputSchemaJson: costlySchema()}, "invalid_output: tool result could not be checked"},
		{"number past the checker", `try { await tools.c({}) } catch (e) { return e.code + ": " + e.message }`, `1e9999999`,
			&ptcv1.ToolDefinition{Name: "c", OutputSchemaJson: `{"minimum":0}`}, "too large to check"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSession(ctx, t, f.rpc, startMsg(tc.script, tc.def).GetStart())
			for {
				m, err := s.Recv()
				if err == io.EOF {
					t.Fatal("no result")
				}
				if err != nil {
					t.Fatal(err)
				}
				if call := m.GetToolCall(); call != nil {
					_ = s.Send(&ptcv1.SessionRequest{Msg: &ptcv1.SessionRequest_ToolResult{ToolResult: &ptcv1.ToolResult{
						CallId: call.GetCallId(), Outcome: &ptcv1.ToolResult_OutputJson{OutputJson: tc.answer}}}})
				}
				if r := m.GetResult(); r != nil {
					if !strings.Contains(r.GetResultJson(), tc.want) {
						t.Fatalf("the script saw %s %v, want %q", r.GetResultJson(), r.GetError(), tc.want)
					}
					return
				}
			}
		})
	}
	t.Run("client schemas in all", func(t *testing.T) {
		// Three schemas of 8,000 values each: each within its own bound,
		// more than a request's in all.
		branches := strings.TrimSuffix(strings.Repeat(`{"const":1},`, 3999), ",")
		var defs []*ptcv1.ToolDefinition
		for _, n := range []string{"a", "b", "c"} {
			defs = append(defs, &ptcv1.ToolDefinition{Name: n, InputSchemaJson: `{"anyOf":[` + branches + `]}`})
		}
		s := startSession(ctx, t, f.rpc, startMsg(`return 1`, defs...).GetStart())
		_, err := s.Recv()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "JSON values in all") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("client schema that does not compile", func(t *testing.T) {
		// Refused once, by the executor, whichever way it came.
		bad := &ptcv1.ToolDefinition{Name: "ask", InputSchemaJson: `{"type":"no-such-type"}`}
		s := startSession(ctx, t, f.rpc, startMsg(`return 1`, bad).GetStart())
		_, err := s.Recv()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `tool "ask": input schema`) {
			t.Fatalf("Session: %v", err)
		}
		req := jsReq(`return 1`)
		req.Resumable = true
		req.ClientTools = []*ptcv1.ToolDefinition{bad}
		_, err = f.rpc.Execute(ctx, req)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `tool "ask": input schema`) {
			t.Fatalf("Execute: %v", err)
		}
	})
	// ptcd still serves.
	if res, err := f.rpc.Execute(ctx, jsReq(`return 2`)); err != nil || res.GetResultJson() != "2" {
		t.Fatalf("%v %v", err, res)
	}
}
