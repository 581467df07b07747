package ptc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// tool returns a server tool that answers 1.
func tool(name string) tools.Tool {
	return tools.Tool{Definition: tools.Definition{Name: name},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }}
}

// TestToolsWithRegistry: NewRunner(WithTools(add), WithRegistry(reg))
// keeps add, in either order; the script sees both tools.
func TestToolsWithRegistry(t *testing.T) {
	for _, order := range []string{"tools first", "registry first"} {
		t.Run(order, func(t *testing.T) {
			reg := tools.NewRegistry()
			if err := reg.Register(tool("other")); err != nil {
				t.Fatal(err)
			}
			opts := []ptc.Option{ptc.WithTools(tool("add")), ptc.WithRegistry(reg)}
			if order == "registry first" {
				opts[0], opts[1] = opts[1], opts[0]
			}
			r, err := ptc.NewRunner(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res, err := r.Execute(context.Background(), ptc.Request{Source: `return await tools.add({}) + await tools.other({})`})
			if succeeded(t, res, err); string(res.Result) != "2" {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestOptionPairs gives every pair of options that set the same thing to
// NewRunner in both orders: the outcome is the same either way, and is
// the one expected (both kept, or a refusal naming the option).
func TestOptionPairs(t *testing.T) {
	shared := func() ptc.Option { // a registry per call, with one tool
		reg := tools.NewRegistry()
		_ = reg.Register(tool("shared"))
		return ptc.WithRegistry(reg)
	}
	sameReg := tools.NewRegistry()
	lim := func(d time.Duration) ptc.Limits { return ptc.Limits{Timeout: d} }
	cases := []struct {
		name    string
		a, b    func() ptc.Option
		tools   string // the registry's tools when both are kept
		refused string // the error when the pair is refused
	}{
		{"tools and tools", func() ptc.Option { return ptc.WithTools(tool("a")) }, func() ptc.Option { return ptc.WithTools(tool("b")) }, "a,b", ""},
		{"tools and registry", func() ptc.Option { return ptc.WithTools(tool("a")) }, shared, "a,shared", ""},
		{"same tool twice", func() ptc.Option { return ptc.WithTools(tool("a")) }, func() ptc.Option { return ptc.WithTools(tool("a")) }, "", `"a"`},
		{"two registries", shared, shared, "", "ptc: WithRegistry given twice with different registries"},
		{"one registry twice", func() ptc.Option { return ptc.WithRegistry(sameReg) }, func() ptc.Option { return ptc.WithRegistry(sameReg) }, "", ""},
		{"defaults and ceilings", func() ptc.Option { return ptc.WithDefaults(lim(time.Second)) }, func() ptc.Option { return ptc.WithCeilings(lim(time.Minute)) }, "", ""},
		{"defaults twice", func() ptc.Option { return ptc.WithDefaults(lim(time.Second)) }, func() ptc.Option { return ptc.WithDefaults(lim(2 * time.Second)) }, "", "ptc: WithDefaults given twice with different values"},
		{"same defaults twice", func() ptc.Option { return ptc.WithDefaults(lim(time.Second)) }, func() ptc.Option { return ptc.WithDefaults(lim(time.Second)) }, "", ""},
		{"ceilings twice", func() ptc.Option { return ptc.WithCeilings(lim(time.Minute)) }, func() ptc.Option { return ptc.WithCeilings(lim(2 * time.Minute)) }, "", "ptc: WithCeilings given twice with different values"},
		{"source bound twice", func() ptc.Option { return ptc.WithMaxSourceBytes(1 << 10) }, func() ptc.Option { return ptc.WithMaxSourceBytes(2 << 10) }, "", "ptc: WithMaxSourceBytes given twice"},
		{"input bound twice", func() ptc.Option { return ptc.WithMaxInputBytes(1 << 10) }, func() ptc.Option { return ptc.WithMaxInputBytes(2 << 10) }, "", "ptc: WithMaxInputBytes given twice"},
		{"languages twice", func() ptc.Option { return ptc.WithLanguages(ptc.LanguageJavaScript) }, func() ptc.Option { return ptc.WithLanguages(ptc.LanguageTypeScript) }, "", "ptc: WithLanguages given twice"},
		{"isolation twice", func() ptc.Option { return ptc.WithIsolation(ptc.Isolation{}) }, func() ptc.Option { return ptc.WithIsolation(ptc.Isolation{Idle: 3}) }, "", "ptc: WithIsolation given twice"},
		{"wasm twice", func() ptc.Option { return ptc.WithWASM(ptc.WASM{}) }, func() ptc.Option { return ptc.WithWASM(ptc.WASM{RealClock: true}) }, "", "ptc: WithWASM given twice"},
		{"durable twice", func() ptc.Option { return ptc.WithDurable(ptc.Durable{}) }, func() ptc.Option { return ptc.WithDurable(ptc.Durable{TTL: time.Hour}) }, "", "ptc: WithDurable given twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var outcomes [2]string
			for i, opts := range [][]func() ptc.Option{{tc.a, tc.b}, {tc.b, tc.a}} {
				r, err := ptc.NewRunner(opts[0](), opts[1]())
				switch {
				case tc.refused != "":
					if err == nil || !strings.Contains(err.Error(), tc.refused) {
						t.Fatalf("order %d: err = %v, want one containing %s", i, err, tc.refused)
					}
					outcomes[i] = err.Error()
					continue
				case err != nil:
					t.Fatalf("order %d: %v", i, err)
				}
				var names []string
				for _, d := range r.Tools() {
					names = append(names, d.Name)
				}
				outcomes[i] = strings.Join(names, ",")
				_ = r.Close()
				if tc.tools != "" && outcomes[i] != tc.tools {
					t.Fatalf("order %d: tools %s, want %s", i, outcomes[i], tc.tools)
				}
			}
			if outcomes[0] != outcomes[1] {
				t.Fatalf("the order changes the outcome:\n%s\n%s", outcomes[0], outcomes[1])
			}
		})
	}
}

// TestOptionLimitsEitherOrder checks that defaults and ceilings given in
// either order both reach the runner's executions.
func TestOptionLimitsEitherOrder(t *testing.T) {
	d, c := ptc.WithDefaults(ptc.Limits{MaxToolCalls: 7}), ptc.WithCeilings(ptc.Limits{MaxToolCalls: 9})
	for i, opts := range [][]ptc.Option{{d, c}, {c, d}} {
		r, err := ptc.NewRunner(opts...)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Execute(context.Background(), ptc.Request{Source: `return 1`})
		high, herr := r.Execute(context.Background(), ptc.Request{Source: `return 1`, Limits: ptc.Limits{MaxToolCalls: 100}})
		_ = r.Close()
		if err != nil || herr != nil || res.EffectiveLimits.MaxToolCalls != 7 || high.EffectiveLimits.MaxToolCalls != 9 {
			t.Fatalf("order %d: err %v %v, effective %d and %d, want 7 (default) and 9 (ceiling)", i, err, herr, res.EffectiveLimits.MaxToolCalls, high.EffectiveLimits.MaxToolCalls)
		}
	}
}
