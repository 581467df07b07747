package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/tools"
)

// approvalBackend is ptc's server over an in-process executor with two
// tools that need approval — delete_customer by its definition, and
// close_account by the server's configuration — and one that does not.
// runs counts the calls that reached a handler.
func approvalBackend(t *testing.T, runs *atomic.Int64) *server.Server {
	t.Helper()
	handler := func(_ context.Context, c tools.Call) (json.RawMessage, error) {
		runs.Add(1)
		var args struct{ ID string }
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, err
		}
		return json.Marshal("done " + args.ID)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	reg := tools.NewRegistry()
	err := reg.Register(
		tools.Tool{Definition: tools.Definition{Name: "delete_customer", Description: "Deletes a customer.", InputSchema: schema, RequiresApproval: true}, Handler: handler},
		tools.Tool{Definition: tools.Definition{Name: "close_account", Description: "Closes an account.", InputSchema: schema}, Handler: handler},
		tools.Tool{Definition: tools.Definition{Name: "read_customer", Description: "Reads a customer.", InputSchema: schema}, Handler: handler},
	)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Approve: func(name string) bool { return name == "close_account" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	return server.New(ex)
}

// catching calls tool from a program that reports a rejected call as
// "code: message" instead of failing.
func catching(tool string) string {
	return codeArgs(`try { return await tools.` + tool + `({id: "c-42"}); } catch (e) { return e.code + ": " + e.message; }`)
}

// TestApprovals: a call made inside a program to a tool that needs
// approval (by its definition, or by the server's configuration) is put
// to the MCP client through elicitation, through the executor's approval
// hook. Approved — the action accept with exactly {"approve": true} — the
// tool runs once; refused, untouched (accept with no content, or {}),
// answered with anything but the boolean true or with fields besides it,
// declined, dismissed, failed to ask, or from a client without
// elicitation, the tool never runs and the program's call rejects with
// code denied and a reason in plain words (no SDK or transport text). A
// tool that needs no approval asks nothing.
func TestApprovals(t *testing.T) {
	cases := []struct {
		name   string
		tool   string
		answer *sdk.ElicitResult // nil: the client has no elicitation
		err    error             // the client's handler fails
		runs   int64
		want   string
		reason string // in the question
	}{
		{"approved", "delete_customer", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil, 1, `"done c-42"`, "its definition requires approval"},
		{"approved by configuration", "close_account", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil, 1, `"done c-42"`, "the server's configuration requires approval for it"},
		{"not allowed", "delete_customer", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil, 0, `"denied: the user did not allow the call"`, "its definition requires approval"},
		{"declined", "delete_customer", &sdk.ElicitResult{Action: "decline"}, nil, 0, `"denied: the user declined the call"`, "its definition requires approval"},
		{"dismissed", "close_account", &sdk.ElicitResult{Action: "cancel"}, nil, 0, `"denied: the user dismissed the approval request"`, "the server's configuration requires approval for it"},
		{"accept without content", "delete_customer", &sdk.ElicitResult{Action: "accept"}, nil, 0, `"denied: the user did not allow the call"`, "its definition requires approval"},
		{"untouched form", "delete_customer", &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil, 0, `"denied: the user did not allow the call"`, "its definition requires approval"},
		{"approve with an unknown field", "delete_customer", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "scope": "all"}}, nil, 0, `"denied: the answer to the approval request was not a clear yes`, "its definition requires approval"},
		{"unknown field only", "delete_customer", &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil, 0, `"denied: the answer to the approval request was not a clear yes`, "its definition requires approval"},
		{"action in capitals", "delete_customer", &sdk.ElicitResult{Action: "ACCEPT", Content: map[string]any{"approve": true}}, nil, 0, `"denied: the user dismissed the approval request"`, "its definition requires approval"},
		{"declined with approve true", "delete_customer", &sdk.ElicitResult{Action: "decline", Content: map[string]any{"approve": true}}, nil, 0, `"denied: the user declined the call"`, "its definition requires approval"},
		{"asking fails", "delete_customer", nil, errors.New("no screen"), 0, `"denied: the MCP client could not ask its user for approval (it answered the request with an error); the call is denied"`, "its definition requires approval"},
		{"no elicitation", "delete_customer", nil, nil, 0, `"denied: tool delete_customer needs approval and this MCP client cannot ask for it (it does not support elicitation)`, ""},
		{"no approval needed", "read_customer", &sdk.ElicitResult{Action: "decline"}, nil, 1, `"done c-42"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			var mu sync.Mutex
			var asked []string
			opts := &sdk.ClientOptions{}
			if tc.answer != nil || tc.err != nil {
				opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, r.Params.Message)
					return tc.answer, tc.err
				}
			}
			cs := connect(t, mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)}), opts)
			res := call(t, cs, "execute", catching(tc.tool))
			if res.IsError || !strings.HasPrefix(text(res), tc.want) {
				t.Fatalf("isError %v %q, want %s…", res.IsError, text(res), tc.want)
			}
			if runs.Load() != tc.runs {
				t.Fatalf("the tool ran %d times, want %d", runs.Load(), tc.runs)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.reason == "" {
				if len(asked) != 0 {
					t.Fatalf("asked %q", asked)
				}
				return
			}
			if len(asked) != 1 || !strings.Contains(asked[0], tc.tool+` with {"id":"c-42"}`) || !strings.Contains(asked[0], tc.reason) {
				t.Fatalf("asked %q", asked)
			}
		})
	}
}

// TestApprovalsOneAtATime: calls started together are asked about one
// after the other; each approved call runs once, and a denied one rejects
// uncaught (the answer is an error naming the reason).
func TestApprovalsOneAtATime(t *testing.T) {
	var runs, open, most atomic.Int64
	opts := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		if o := open.Add(1); o > most.Load() {
			most.Store(o)
		}
		defer open.Add(-1)
		if strings.Contains(r.Params.Message, `"c-3"`) {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)}), opts)
	res := call(t, cs, "execute", codeArgs(`return await Promise.all(["c-1", "c-2"].map(id => tools.delete_customer({id})));`))
	if res.IsError || text(res) != `["done c-1","done c-2"]` || runs.Load() != 2 || most.Load() != 1 {
		t.Fatalf("isError %v %q, %d runs, %d questions open at once", res.IsError, text(res), runs.Load(), most.Load())
	}
	res = call(t, cs, "execute", codeArgs(`return await tools.delete_customer({id: "c-3"});`))
	if !res.IsError || !strings.Contains(text(res), "denied") || !strings.Contains(text(res), "the user declined the call") || runs.Load() != 2 {
		t.Fatalf("isError %v %q, %d runs", res.IsError, text(res), runs.Load())
	}
}

// TestApprovalsOverHTTP: the question reaches a client over streamable
// HTTP (ptcd's MCP endpoint) in the middle of the execute call.
func TestApprovalsOverHTTP(t *testing.T) {
	var runs atomic.Int64
	srv := startHTTP(t, mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)}), 0)
	var asked atomic.Int64
	opts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked.Add(1)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{tokenB}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "execute", catching("delete_customer"))
	if res.IsError || text(res) != `"done c-42"` || runs.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("isError %v %q, %d runs, asked %d times", res.IsError, text(res), runs.Load(), asked.Load())
	}
}
