package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/mcpserve"
)

// approvingBackend stands in for an executor whose tool crm.delete needs
// approval: each run asks the call's Approver once, as the bridge would
// before calling the tool, and returns the decision.
func approvingBackend() *fakeBackend {
	return &fakeBackend{run: func(ctx context.Context, req core.Request) (*core.Result, *fault.Error) {
		d := mcpserve.ApproverFrom(ctx)(ctx, mcpserve.Approval{Tool: "crm.delete", Arguments: json.RawMessage(`{"id":"c-42"}`), Reason: "it deletes customer data"})
		if !d.Approved {
			r := &core.Result{ExecutionID: "ex_1", Error: &fault.Error{Kind: fault.KindScript, Tool: "crm.delete",
				Message: "uncaught ToolError from tool crm.delete (code denied): " + d.Reason}}
			r.ModelMessage = core.ModelMessage(r)
			return r, nil
		}
		return &core.Result{ExecutionID: "ex_1", Result: json.RawMessage(`"deleted"`), ModelMessage: `"deleted"`}, nil
	}}
}

// TestApprovals: a call that needs approval is asked through elicitation
// when the client supports it — approved, refused, declined or dismissed —
// and denied with a reason when it does not.
func TestApprovals(t *testing.T) {
	cases := []struct {
		name    string
		answer  *sdk.ElicitResult // nil: the client has no elicitation
		isError bool
		want    string
	}{
		{"approved", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, false, `"deleted"`},
		{"not allowed", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, true, "the user did not allow the call"},
		{"declined", &sdk.ElicitResult{Action: "decline"}, true, "the user declined the call"},
		{"dismissed", &sdk.ElicitResult{Action: "cancel"}, true, "the user dismissed the approval request"},
		{"no elicitation", nil, true, "this MCP client cannot ask for it (it does not support elicitation)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			opts := &sdk.ClientOptions{}
			if tc.answer != nil {
				opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, r.Params.Message)
					return tc.answer, nil
				}
			}
			cs := connect(t, mcpserve.New(mcpserve.Config{Backend: approvingBackend()}), opts)
			res := call(t, cs, "execute", codeArgs(`return await tools.crm.delete({id: "c-42"})`))
			if res.IsError != tc.isError || !strings.Contains(text(res), tc.want) {
				t.Fatalf("isError %v %q, want %q", res.IsError, text(res), tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.answer == nil {
				return
			}
			if len(asked) != 1 || !strings.Contains(asked[0], `crm.delete with {"id":"c-42"}`) || !strings.Contains(asked[0], "it deletes customer data") {
				t.Fatalf("asked %q", asked)
			}
		})
	}
}

// TestApproverOutsideACall denies: nobody can be asked.
func TestApproverOutsideACall(t *testing.T) {
	d := mcpserve.ApproverFrom(context.Background())(context.Background(), mcpserve.Approval{Tool: "x"})
	if d.Approved || !strings.Contains(d.Reason, "nobody can be asked") {
		t.Fatal(d)
	}
}
