package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// noServerToolsScript reports whether a server tool answered and, when
// its input says there is one, what the client tool answered.
const noServerToolsScript = `const out = {};
try { await tools.get_team_members({department: "sales"}); out.server = "called"; } catch (e) { out.server = e.message; }
if (input && input.mine) out.mine = await tools.mine({});
return out;`

// TestNoServerToolsOverGRPC: Request.NoServerTools reaches the server over
// a real gRPC connection, through Execute and through a Session (Run):
// the script gets no server tool, whatever AllowedTools says, and keeps
// its client tools.
func TestNoServerToolsOverGRPC(t *testing.T) {
	f := start(t)
	mine := tools.Tool{Definition: tools.Definition{Name: "mine", Description: "the caller's own tool", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`"mine"`), nil }}
	for _, tc := range []struct {
		name       string
		req        ptc.Request
		run        bool
		server     string // what the server tool call gave: "called" or part of the error
		mine       bool
		refusedFor string // a refusal's message, when the request is refused
	}{
		{name: "execute, server tools", req: ptc.Request{Source: noServerToolsScript}, server: "called"},
		{name: "execute, no server tools", req: ptc.Request{Source: noServerToolsScript, NoServerTools: true}, server: "unknown tool"},
		{name: "execute, no server tools beats allowed tools", req: ptc.Request{Source: noServerToolsScript, NoServerTools: true, AllowedTools: []string{"get_team_members"}}, server: "unknown tool"},
		{name: "run, server tools", req: ptc.Request{Source: noServerToolsScript}, run: true, server: "called", mine: true},
		{name: "run, no server tools", req: ptc.Request{Source: noServerToolsScript, NoServerTools: true}, run: true, server: "unknown tool", mine: true},
		{name: "approval of a tool the script cannot have", req: ptc.Request{Source: noServerToolsScript, NoServerTools: true, RequireApproval: []string{"get_team_members"}}, refusedFor: "require_approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var res *ptc.Result
			var err error
			if tc.run {
				tc.req.Input = json.RawMessage(`{"mine":true}`)
				res, err = f.client.Run(context.Background(), tc.req, mine)
			} else {
				res, err = f.client.Execute(context.Background(), tc.req)
			}
			if tc.refusedFor != "" {
				if ptc.CodeOf(err) != ptc.InvalidArgument || !strings.Contains(err.Error(), tc.refusedFor) {
					t.Fatalf("got %v, want INVALID_ARGUMENT about %s", err, tc.refusedFor)
				}
				return
			}
			if err != nil || res.Error != nil {
				t.Fatalf("%v %+v", err, res)
			}
			var out struct{ Server, Mine string }
			if err := json.Unmarshal(res.Result, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Server, tc.server) {
				t.Errorf("server tool: %q, want %q", out.Server, tc.server)
			}
			if tc.mine != (out.Mine == "mine") {
				t.Errorf("client tool: %q", out.Mine)
			}
		})
	}
}
