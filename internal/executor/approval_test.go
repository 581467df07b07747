package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestListToolsApprovalMatchesExecutions: for every tool, what ListTools
// reports as RequiresApproval — and what tools.$describe says in a
// script — is what an execution enforces — the tool's
// definition, the server's rule, both, or neither — and the registry's own
// definitions are left as they were.
func TestListToolsApprovalMatchesExecutions(t *testing.T) {
	ok := func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	cases := []struct {
		name     string
		declared bool
		want     bool
		why      string
	}{
		{"plain", false, false, ""},
		{"declared", true, true, whyDefinition},
		{"crm.delete_contact", false, true, whyConfig},
		{"crm.delete_all", true, true, whyDefinition},
		{"crm.find", false, false, ""},
	}
	reg := tools.NewRegistry()
	for _, c := range cases {
		if err := reg.Register(tools.Tool{Definition: tools.Definition{Name: c.name, RequiresApproval: c.declared}, Handler: ok}); err != nil {
			t.Fatal(err)
		}
	}
	rule := func(name string) bool { return strings.HasPrefix(name, "crm.delete_") }
	for _, approve := range []func(string) bool{rule, nil} {
		e := newExecutor(t, Config{Registry: reg, Approve: approve})
		l, ferr := e.ListTools(core.ToolQuery{}, nil, limits.Limits{})
		if ferr != nil {
			t.Fatal(ferr)
		}
		listed := map[string]bool{}
		for _, d := range l.Tools {
			listed[d.Name] = d.RequiresApproval
		}
		gated, ferr := e.approvalsOf(core.Request{}, reg.All())
		if ferr != nil {
			t.Fatal(ferr)
		}
		// tools.$describe says what ListTools says, in its field and in
		// the declaration's doc comment.
		res, ferr := e.Execute(context.Background(), core.Request{Script: core.Script{Source: `
			const out = {};
			for (const n of ["plain", "declared", "crm.delete_contact", "crm.delete_all", "crm.find"]) {
				const d = await tools.$describe(n);
				out[n] = [d.requires_approval === true, d.typescript.includes("waits for approval")];
			}
			return out;`}}, limits.Limits{})
		if ferr != nil || res.Error != nil {
			t.Fatal(ferr, res.Error)
		}
		var described map[string][2]bool
		if err := json.Unmarshal(res.Result, &described); err != nil {
			t.Fatal(err, string(res.Result))
		}
		for _, c := range cases {
			want, why := c.want, c.why
			if approve == nil && why == whyConfig {
				want, why = false, ""
			}
			if listed[c.name] != want {
				t.Errorf("rule %v: ListTools says %s requires approval %v, want %v", approve != nil, c.name, listed[c.name], want)
			}
			if described[c.name] != [2]bool{want, want} {
				t.Errorf("rule %v: tools.$describe says %s requires approval %v (field, declaration), want %v", approve != nil, c.name, described[c.name], want)
			}
			if gated[c.name] != why {
				t.Errorf("rule %v: an execution gates %s with %q, want %q", approve != nil, c.name, gated[c.name], why)
			}
		}
	}
	for _, d := range reg.Definitions() {
		if d.Name == "crm.delete_contact" && d.RequiresApproval {
			t.Fatal("ListTools changed the registry's definition")
		}
	}
}
