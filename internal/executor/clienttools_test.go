package executor

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestClientToolNamespaces: a client tool's name may be neither another
// tool's name nor a namespace of one, nor have one as a namespace, server
// tools and client tools alike; the error names the other tool. A request
// declares at most MaxClientTools client tools, and that many with names
// sharing long prefixes are accepted.
func TestClientToolNamespaces(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.SetGroup("server", []tools.Tool{clientTool("crm.deals", nil, nil), clientTool("mail", nil, nil)}); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, Config{Registry: reg})
	names := func(ns ...string) []tools.Tool {
		ts := make([]tools.Tool, len(ns))
		for i, n := range ns {
			ts[i] = clientTool(n, nil, nil)
		}
		return ts
	}
	many := make([]string, MaxClientTools)
	prefix := strings.Repeat("p", 60)
	for i := range many {
		many[i] = fmt.Sprintf("%s.t%d", prefix, i)
	}
	for _, tc := range []struct {
		name    string
		clients []string
		want    string // "" when accepted
	}{
		{"independent", []string{"ask", "crm2", "mail_box", "a.b", "a.bc"}, ""},
		{"a server tool's namespace", []string{"crm"}, `client tool "crm" clashes with tool "crm.deals"`},
		{"under a server tool", []string{"mail.send"}, `client tool "mail.send" clashes with tool "mail"`},
		{"a server tool's name", []string{"mail"}, `collides with a server tool`},
		{"under an earlier client tool", []string{"x", "x.y.z"}, `client tool "x.y.z" clashes with tool "x"`},
		{"an earlier client tool's namespace", []string{"x.y.z", "x.y"}, `client tool "x.y" clashes with tool "x.y.z"`},
		{"declared twice", []string{"q", "q"}, `declared twice`},
		{"as many as allowed", many, ""},
		{"one too many", append(many, "extra"), fmt.Sprintf("%d client tools: a request declares at most %d", MaxClientTools+1, MaxClientTools)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := core.Request{Script: core.Script{Source: "return 1"}, ClientTools: names(tc.clients...)}
			_, ferr := e.Prepare(req, limits.Limits{})
			switch {
			case tc.want == "" && ferr != nil:
				t.Fatalf("refused: %v", ferr)
			case tc.want != "" && (ferr == nil || !strings.Contains(ferr.Message, tc.want)):
				t.Fatalf("got %v, want %q", ferr, tc.want)
			}
		})
	}
}

// BenchmarkPrepareManyClientTools prepares a request with MaxClientTools
// client tools whose names share a long prefix: checking each name
// against the others is linear in their length.
func BenchmarkPrepareManyClientTools(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ts := make([]tools.Tool, MaxClientTools)
	for i := range ts {
		ts[i] = clientTool(fmt.Sprintf("%s.t%d", strings.Repeat("p.", 30)+"x", i), json.RawMessage(`true`), nil)
	}
	req := core.Request{Script: core.Script{Source: "return 1"}, ClientTools: ts}
	for b.Loop() {
		if _, ferr := e.Prepare(req, limits.Limits{}); ferr != nil {
			b.Fatal(ferr)
		}
	}
}
