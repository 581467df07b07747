package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

func selectRegistry(t *testing.T, names ...string) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry()
	for _, n := range names {
		if err := reg.Register(tools.Tool{Definition: tools.Definition{Name: n}, Handler: okHandler}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func okHandler(context.Context, tools.Call) (json.RawMessage, error) {
	return json.RawMessage(`1`), nil
}

// TestClientToolNames: a client tool declared twice is refused as a
// duplicate, not as a collision with a server tool; one that shares a
// server tool's name is refused as a collision.
func TestClientToolNames(t *testing.T) {
	e := newExecutor(t, Config{Registry: selectRegistry(t, "server_tool")})
	client := func(names ...string) []tools.Tool {
		var out []tools.Tool
		for _, n := range names {
			out = append(out, tools.Tool{Definition: tools.Definition{Name: n}, Handler: okHandler})
		}
		return out
	}
	cases := []struct {
		name    string
		req     core.Request
		wantErr string // empty: accepted
	}{
		{"distinct", core.Request{ClientTools: client("a", "b")}, ""},
		{"twice", core.Request{ClientTools: client("a", "a")}, `client tool "a" is declared twice`},
		{"twice without server tools", core.Request{NoServerTools: true, ClientTools: client("a", "b", "a")}, `client tool "a" is declared twice`},
		{"server tool's name", core.Request{ClientTools: client("server_tool")}, `client tool "server_tool" collides with a server tool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Script = core.Script{Source: "return 1"}
			_, err := e.Prepare(tc.req, limits.Limits{})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || err.Code != fault.CodeInvalidArgument || !strings.Contains(err.Message, tc.wantErr)):
				t.Fatalf("error %v, want INVALID_ARGUMENT %q", err, tc.wantErr)
			}
		})
	}
}

// TestListToolsNames: names selects tools in the order given, each once
// however often it is repeated; an unknown name is refused.
func TestListToolsNames(t *testing.T) {
	e := newExecutor(t, Config{Registry: selectRegistry(t, "a", "b", "c")})
	cases := []struct {
		name  string
		names []string
		want  string // the listed names, or the error
	}{
		{"all", nil, "a,b,c"},
		{"order kept", []string{"c", "a"}, "c,a"},
		{"repeated", []string{"b", "b"}, "b"},
		{"repeated apart", []string{"c", "a", "c", "b", "a"}, "c,a,b"},
		{"unknown", []string{"a", "nope"}, `names: unknown tool "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := e.ListTools(core.ToolQuery{Names: tc.names}, nil, limits.Limits{})
			if err != nil {
				if err.Code != fault.CodeInvalidArgument || err.Message != tc.want {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				return
			}
			var got []string
			for _, d := range l.Tools {
				got = append(got, d.Name)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("listed %v, want %s", got, tc.want)
			}
		})
	}
}
