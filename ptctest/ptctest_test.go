package ptctest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// recorder is a testing.TB that keeps failures instead of failing.
type recorder struct {
	testing.TB
	errs  []string
	fatal string
}

type fatalStop struct{}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}

// capture runs f with a recorder and returns it.
func capture(f func(tb testing.TB)) (r *recorder) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatalStop); !ok {
				panic(p)
			}
		}
	}()
	f(r)
	return r
}

const team = `[{"id":"eng-01","name":"Ada","level":"mid"},{"id":"eng-02","name":"Bo","level":"senior"}]`

func TestFakes(t *testing.T) {
	cases := []struct {
		name   string
		script string
		fakes  []*Fake
		want   string
		kind   ptc.ErrorKind
		errSub string
	}{
		{
			name:   "static",
			script: `return (await tools.get_team_members({ department: "sales" })).length`,
			fakes:  []*Fake{Static("get_team_members", json.RawMessage(team))},
			want:   `2`,
		},
		{
			name: "sequence with an injected error",
			script: `const out = [];
for (let i = 0; i < 3; i++) {
  try { out.push((await tools.get_budget_by_level({ level: "mid" })).travel_limit) } catch (e) { out.push(e.code) }
}
return out`,
			fakes: []*Fake{Sequence("get_budget_by_level",
				map[string]any{"level": "mid", "travel_limit": 1},
				Fail("rate_limited", "slow down"),
				map[string]any{"level": "mid", "travel_limit": 3})},
			want: `[1, "rate_limited", 3]`,
		},
		{
			name:   "sequence exhausted",
			script: `await tools.get_budget_by_level({ level: "mid" }); await tools.get_budget_by_level({ level: "mid" })`,
			fakes:  []*Fake{Sequence("get_budget_by_level", map[string]any{"level": "mid", "travel_limit": 1})},
			kind:   ptc.KindScript, errSub: "fixture_exhausted",
		},
		{
			name: "argument subsets",
			script: `const a = await tools.get_team_members({ department: "sales" });
const b = await tools.get_team_members({ department: "support" });
return [a.length, b.length]`,
			fakes: []*Fake{Static("get_team_members", []any{}).When(map[string]any{"department": "sales"}, json.RawMessage(team))},
			want:  `[2, 0]`,
		},
		{
			name:   "always failing",
			script: `return await tools.get_team_members({ department: "sales" })`,
			fakes:  []*Fake{Static("get_team_members", Fail("unavailable", "directory down"))},
			kind:   ptc.KindScript, errSub: "directory down",
		},
		{
			name:   "demo definitions check fake outputs",
			script: `return await tools.get_team_members({ department: "sales" })`,
			fakes:  []*Fake{Static("get_team_members", []any{map[string]any{"id": "not an id"}})},
			kind:   ptc.KindScript, errSub: "invalid_output",
		},
		{
			name:   "demo definitions check arguments",
			script: `return await tools.get_team_members({ department: "nope" })`,
			fakes:  []*Fake{Static("get_team_members", []any{})},
			kind:   ptc.KindScript, errSub: "invalid_arguments",
		},
		{
			name:   "own definition",
			script: `return await tools.search.web({ q: "x" })`,
			fakes: []*Fake{Static("search.web", []string{"a"}).Define(tools.Definition{
				InputSchema: json.RawMessage(`{"type":"object","required":["q"]}`)})},
			want: `["a"]`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Run(t, tc.script, WithFakes(tc.fakes...))
			if tc.kind != 0 {
				AssertError(t, res, tc.kind, tc.errSub)
				return
			}
			AssertResult(t, res, json.RawMessage(tc.want))
		})
	}
}

func TestFakeIsFreshPerRun(t *testing.T) {
	f := Sequence("get_budget_by_level", map[string]any{"level": "mid", "travel_limit": 1})
	for i := 0; i < 2; i++ {
		res := Run(t, `return (await tools.get_budget_by_level({ level: "mid" })).travel_limit`, WithFakes(f))
		AssertResult(t, res, 1)
	}
}

func TestAssertions(t *testing.T) {
	res := Run(t, `const t = await tools.get_team_members({ department: "sales" });
await tools.get_budget_by_level({ level: "mid" });
return { n: t.length, at: Date.now() }`, WithDemoTools(), WithInput(map[string]int{"x": 1}))
	failed := Run(t, `throw new Error("boom")`)
	cases := []struct {
		name string
		fn   func(tb testing.TB) bool
		ok   bool
		msg  string
	}{
		{"result ok", func(tb testing.TB) bool { return AssertResult(tb, res, map[string]any{"n": 8, "at": 0}) }, true, ""},
		{"result differs", func(tb testing.TB) bool { return AssertResult(tb, res, map[string]any{"n": 5, "at": 0}) }, false, "/n: 5 → 8"},
		{"result of a failed script", func(tb testing.TB) bool { return AssertResult(tb, failed, 1) }, false, "the script failed: SCRIPT_ERROR at line 1"},
		{"error ok", func(tb testing.TB) bool { return AssertError(tb, failed, ptc.KindScript, "boom") }, true, ""},
		{"error kind", func(tb testing.TB) bool { return AssertError(tb, failed, ptc.KindTimeout, "") }, false, "want TIMEOUT, got SCRIPT_ERROR"},
		{"error message", func(tb testing.TB) bool { return AssertError(tb, failed, ptc.KindScript, "bang") }, false, `does not contain "bang"`},
		{"error on success", func(tb testing.TB) bool { return AssertError(tb, res, ptc.KindScript, "") }, false, "but the script succeeded"},
		{"calls ok", func(tb testing.TB) bool { return AssertCalls(tb, res, "get_team_members", "get_budget_by_level") }, true, ""},
		{"calls differ", func(tb testing.TB) bool { return AssertCalls(tb, res, "get_team_members") }, false, "want: [get_team_members]\n  got:  [get_team_members, get_budget_by_level]"},
		{"call ok", func(tb testing.TB) bool {
			return AssertCall(tb, res, 2, "get_budget_by_level", map[string]any{"level": "mid"})
		}, true, ""},
		{"call any args", func(tb testing.TB) bool { return AssertCall(tb, res, 1, "get_team_members", nil) }, true, ""},
		{"call args differ", func(tb testing.TB) bool {
			return AssertCall(tb, res, 1, "get_team_members", map[string]any{"department": "x"})
		}, false, `do not contain {"department":"x"}`},
		{"call tool differs", func(tb testing.TB) bool { return AssertCall(tb, res, 1, "get_expenses", nil) }, false, "call #1 went to get_team_members"},
		{"call out of range", func(tb testing.TB) bool { return AssertCall(tb, res, 3, "get_expenses", nil) }, false, "the script made 2 calls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ok bool
			r := capture(func(tb testing.TB) { ok = tc.fn(tb) })
			if ok != tc.ok || (tc.ok && len(r.errs) > 0) {
				t.Fatalf("returned %v with errors %q", ok, r.errs)
			}
			if !tc.ok && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tc.msg)) {
				t.Fatalf("errors %q, want one containing %q", r.errs, tc.msg)
			}
		})
	}
}

func TestRunFatal(t *testing.T) {
	cases := []struct {
		name string
		fn   func(tb testing.TB)
		msg  string
	}{
		{"bad input", func(tb testing.TB) { Run(tb, `return 1`, WithInput(json.RawMessage("{"))) }, "input: json.RawMessage is not valid JSON"},
		{"unmarshalable output", func(tb testing.TB) { Run(tb, `return 1`, WithFakes(Static("t", func() {}))) }, "fake t: json: unsupported type"},
		{"empty sequence", func(tb testing.TB) { Run(tb, `return 1`, WithFakes(Sequence("t"))) }, "has no answers"},
		{"refused request", func(tb testing.TB) { Run(tb, `return 1`, WithLimits(ptc.Limits{MaxToolCalls: -1})) }, "the request was refused"},
		{"bad tool name", func(tb testing.TB) { Run(tb, `return 1`, WithFakes(Static("1bad", 1))) }, "ptctest: tools:"},
		{"missing cassette", func(tb testing.TB) { Replay(tb, "testdata/none.jsonl") }, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := capture(tc.fn)
			if !strings.Contains(r.fatal, tc.msg) {
				t.Fatalf("Fatalf %q, want %q", r.fatal, tc.msg)
			}
		})
	}
}

func TestRecordReplay(t *testing.T) {
	src, err := os.ReadFile("../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "exp.jsonl")
	rec := Run(t, string(src), WithDemoTools(), WithRequest(func(r *ptc.Request) { r.Seed = 3 }), WithInput(map[string]string{"department": "support"}), WithRecord(tape))
	rep := Replay(t, tape)
	AssertResult(t, rep, rec.Result)
	if len(rep.Trace) != len(rec.Trace) {
		t.Fatalf("%d replayed calls, %d recorded", len(rep.Trace), len(rec.Trace))
	}

	r := capture(func(tb testing.TB) {
		Replay(tb, tape, WithScript(strings.Replace(string(src), `|| "Q3"`, `|| "Q1"`, 1)))
	})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "replay divergence at call #2 (get_expenses)") ||
		!strings.Contains(r.errs[0], `/quarter: "Q3" → "Q1"`) {
		t.Fatalf("divergence report %q", r.errs)
	}
	r = capture(func(tb testing.TB) { Replay(tb, tape, WithInput(map[string]string{"department": "sales"})) })
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "replay divergence at call #1 (get_team_members)") {
		t.Fatalf("divergence report %q", r.errs)
	}
}

// TestOptionsInEitherOrder gives pairs of options that set the same thing
// in both orders: values that add up are all kept, and one value given
// twice differently fails the test naming the option, whichever comes
// first.
func TestOptionsInEitherOrder(t *testing.T) {
	lim := func(n int32) Option { return WithLimits(ptc.Limits{MaxToolCalls: n}) }
	cases := []struct {
		name  string
		a, b  Option
		want  string // the result, or the failure
		fails bool
	}{
		{"input twice", WithInput(1), WithInput(2), "WithInput given twice with different values", true},
		{"same input twice", WithInput(1), WithInput(1), "1", false},
		{"limits twice", lim(3), lim(4), "WithLimits given twice with different values", true},
		{"fakes and tools", WithFakes(Static("a", 1)), WithTools(tools.Tool{Definition: tools.Definition{Name: "b"},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`2`), nil }}), "3", false},
		{"script twice", WithScript("return 1"), WithScript("return 2"), "WithScript given twice with different values", true},
		{"record twice", WithRecord(t.TempDir() + "/a.jsonl"), WithRecord(t.TempDir() + "/b.jsonl"), "WithRecord given twice with different values", true},
	}
	src := `return typeof input === "number" ? input : (await tools.a({})) + (await tools.b({}))`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, opts := range [][]Option{{tc.a, tc.b}, {tc.b, tc.a}} {
				var res *ptc.Result
				r := capture(func(tb testing.TB) { res = Run(tb, src, opts...) })
				switch {
				case tc.fails:
					if !strings.Contains(r.fatal, tc.want) {
						t.Fatalf("order %d: failure %q, want one containing %q", i, r.fatal, tc.want)
					}
				case r.fatal != "" || res.Error != nil || string(res.Result) != tc.want:
					t.Fatalf("order %d: failure %q, result %+v, want %s", i, r.fatal, res, tc.want)
				}
			}
		})
	}
}
