package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

func expensesSource(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// record runs src against the demo tools and returns its cassette (written
// and read back, so that the format is part of every test) and its result.
func record(t testing.TB, src string) (*Cassette, *ptc.Result) {
	t.Helper()
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...))
	if err != nil {
		t.Fatal(err)
	}
	req := ptc.Request{Source: src, Deterministic: true, Seed: 7, IncludeToolResults: true}
	res, err := r.Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(req, r.Tools(), "examples/expenses.js", res)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if c, err = Read(&buf); err != nil {
		t.Fatal(err)
	}
	return c, res
}

// replay replays c, with edit applied to the request, and compares.
func replay(t testing.TB, c *Cassette, edit func(*ptc.Request)) (*ptc.Result, *Divergence) {
	t.Helper()
	req, err := c.Replay()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&req)
	}
	rp := NewReplayer(c)
	r, err := ptc.NewRunner(ptc.WithTools(rp.Tools()...))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res, rp.Check(res)
}

func TestRecordReplayIdentical(t *testing.T) {
	c, orig := record(t, expensesSource(t))
	if len(c.Calls) != 26 || c.Request.Seed != 7 || c.Request.ScriptSHA256 == "" || len(c.Request.Tools) != 3 {
		t.Fatalf("cassette: %d calls, request %+v", len(c.Calls), c.Request)
	}
	res, d := replay(t, c, nil)
	if d != nil {
		t.Fatalf("divergence: %v", d)
	}
	if !bytes.Equal(res.Result, orig.Result) {
		t.Fatalf("result differs:\n%s\n%s", res.Result, orig.Result)
	}
	if len(res.Trace) != len(orig.Trace) {
		t.Fatalf("trace has %d calls, want %d", len(res.Trace), len(orig.Trace))
	}
	for i, r := range res.Trace {
		o := orig.Trace[i]
		if r.Seq != o.Seq || r.Tool != o.Tool || !bytes.Equal(r.Arguments, o.Arguments) || !bytes.Equal(r.Result, o.Result) {
			t.Fatalf("call %d: replayed %d %s %s, recorded %d %s %s", i, r.Seq, r.Tool, r.Arguments, o.Seq, o.Tool, o.Arguments)
		}
	}
}

func TestReplayDivergence(t *testing.T) {
	src := expensesSource(t)
	base, _ := record(t, src)
	clone := func() *Cassette {
		var buf bytes.Buffer
		if err := base.Write(&buf); err != nil {
			t.Fatal(err)
		}
		c, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	script := func(s string) func(*ptc.Request) { return func(r *ptc.Request) { r.Source = s } }
	cases := []struct {
		name   string
		tape   func(*Cassette)
		edit   func(*ptc.Request)
		reason string
		seq    int32
		want   []string
	}{
		{
			name: "changed tool answer changes a later call",
			tape: func(c *Cassette) {
				c.Calls[0].Result = json.RawMessage(strings.Replace(string(c.Calls[0].Result), `"eng-01"`, `"eng-99"`, 1))
			},
			reason: ReasonArguments, seq: 2,
			want: []string{
				"replay divergence at call #2 (get_expenses): the arguments differ from the recording",
				`recorded: {"member_id":"eng-01","quarter":"Q3"}`,
				`actual:   {"member_id":"eng-99","quarter":"Q3"}`,
				`/member_id: "eng-01" → "eng-99"`,
			},
		},
		{
			name: "changed tool answer changes the result",
			tape: func(c *Cassette) {
				for i, call := range c.Calls {
					if call.Tool == "get_budget_by_level" && strings.Contains(string(call.Arguments), "principal") {
						c.Calls[i].Result = json.RawMessage(`{"level":"principal","travel_limit":9000}`)
					}
				}
			},
			reason: ReasonResult,
			want: []string{
				"replay divergence in the result: the script's result differs from the recording",
				`/0/id: "eng-13" → "eng-14"`,
				"more differences",
			},
		},
		{
			name:   "changed script argument",
			edit:   script(strings.Replace(src, `params.quarter || "Q3"`, `params.quarter || "Q2"`, 1)),
			reason: ReasonArguments, seq: 2,
			want: []string{
				"replay divergence at call #2 (get_expenses)",
				`recorded: {"member_id":"eng-01","quarter":"Q3"}`,
				`actual:   {"member_id":"eng-01","quarter":"Q2"}`,
				`/quarter: "Q3" → "Q2"`,
			},
		},
		{
			name:   "extra call",
			edit:   script(strings.Replace(src, "return over;", `await tools.get_budget_by_level({ level: "mid" }); return over;`, 1)),
			reason: ReasonExtra, seq: 27,
			want: []string{
				"replay divergence at call #27 (get_budget_by_level): the script made a call the recording does not have (it has 26 calls)",
				`actual:   {"level":"mid"}`,
			},
		},
		{
			name:   "missing call",
			edit:   script(`return (await tools.get_team_members({ department: "engineering" })).length`),
			reason: ReasonMissing, seq: 2,
			want: []string{
				"replay divergence at call #2 (get_expenses): the recording has a call the script did not make",
				`recorded: {"member_id":"eng-01","quarter":"Q3"}`,
			},
		},
		{
			name:   "other tool",
			edit:   script(`return await tools.get_budget_by_level({ level: "mid" })`),
			reason: ReasonTool, seq: 1,
			want: []string{
				"replay divergence at call #1: the recording called get_team_members, the script called get_budget_by_level",
				`recorded: get_team_members {"department":"engineering"}`,
				`actual:   get_budget_by_level {"level":"mid"}`,
			},
		},
		{
			name:   "arguments that fail validation still diverge",
			edit:   script(`return await tools.get_team_members({ department: "nope" })`),
			reason: ReasonArguments, seq: 1,
			want: []string{`/department: "engineering" → "nope"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clone()
			if tc.tape != nil {
				tc.tape(c)
			}
			_, d := replay(t, c, tc.edit)
			if d == nil {
				t.Fatal("no divergence")
			}
			if d.Reason != tc.reason || d.Seq != tc.seq {
				t.Fatalf("divergence %s at #%d, want %s at #%d: %v", d.Reason, d.Seq, tc.reason, tc.seq, d)
			}
			msg := d.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestReplayHandlerFailsDivergentCall(t *testing.T) {
	c, _ := record(t, expensesSource(t))
	res, d := replay(t, c, func(r *ptc.Request) {
		r.Source = `try { await tools.get_team_members({ department: "sales" }) } catch (e) { return [e.code, e.message] }`
	})
	if d == nil || d.Seq != 1 {
		t.Fatalf("divergence %v", d)
	}
	var got []string
	if err := json.Unmarshal(res.Result, &got); err != nil || got[0] != CodeDivergence ||
		!strings.Contains(got[1], "replay divergence at call #1 (get_team_members)") {
		t.Fatalf("the script saw %s", res.Result)
	}
}

func TestReplayLargeArguments(t *testing.T) {
	echo := tools.Tool{Definition: tools.Definition{Name: "echo"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"n":` + jsonLen(c.Arguments) + `}`), nil
	}}
	r, err := ptc.NewRunner(ptc.WithTools(echo))
	if err != nil {
		t.Fatal(err)
	}
	src := `return (await tools.echo({ s: "x".repeat(20000) })).n`
	req := ptc.Request{Source: src, Deterministic: true, Seed: 1, IncludeToolResults: true}
	res, err := r.Execute(context.Background(), req)
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	c, err := New(req, r.Tools(), "", res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.Calls[0].Arguments), `"$truncated":true`) {
		t.Fatalf("arguments not truncated: %.80s", c.Calls[0].Arguments)
	}
	if _, d := replay(t, c, nil); d != nil {
		t.Fatalf("divergence: %v", d)
	}
	out, d := replay(t, c, func(r *ptc.Request) { r.Source = strings.Replace(src, "20000", "20001", 1) })
	if d == nil || d.Reason != ReasonArguments || out.Error == nil || !strings.Contains(out.Error.Message, CodeDivergence) {
		t.Fatalf("divergence %v, error %v", d, out.Error)
	}
}

func jsonLen(b []byte) string {
	n, _ := json.Marshal(len(b))
	return string(n)
}

func TestSeqOf(t *testing.T) {
	cases := []struct {
		key  string
		want int32
	}{
		{"ex_1/3", 3}, {"a/b/12", 12}, {"7", 7}, {"", 0}, {"ex/x", 0}, {"ex/99999999999", 0},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if got := seqOf(tc.key); got != tc.want {
				t.Fatalf("seqOf(%q) = %d, want %d", tc.key, got, tc.want)
			}
		})
	}
}

func TestReplayClientToolCall(t *testing.T) {
	// Tools served over a Session see the idempotency key, not the seq.
	c := readFile(t, "testdata/tiny.jsonl")
	h := NewReplayer(c).Tools()[0].Handler
	out, err := h(context.Background(), tools.Call{Tool: "get_budget_by_level", IdempotencyKey: "ex-tiny/1", Arguments: json.RawMessage(`{"level":"mid"}`)})
	if err != nil || !Equal(out, []byte(`{"level":"mid","travel_limit":2000}`)) {
		t.Fatalf("got %s, %v", out, err)
	}
	_, err = h(context.Background(), tools.Call{Tool: "get_budget_by_level", IdempotencyKey: "ex-tiny/9", Arguments: json.RawMessage(`{}`)})
	var te *tools.Error
	if !asToolError(err, &te) || te.Code != CodeDivergence || !strings.Contains(te.Message, "call #9") {
		t.Fatalf("extra call: %v", err)
	}
}

func asToolError(err error, te **tools.Error) bool {
	e, ok := err.(*tools.Error)
	*te = e
	return ok
}

// The trace keeps tool results for cassettes, but they never reach the
// model channel.
func TestModelMessageNeverCarriesToolResults(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithTools(demo.Tools()...))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, src string }{
		{"success", expensesSource(t)},
		{"failure", `const t = await tools.get_team_members({ department: "engineering" }); throw new Error("stop")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Execute(context.Background(), ptc.Request{Source: tc.src, IncludeToolResults: true, Deterministic: true, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			// Ada Okafor (eng-01) is in get_team_members' result, not in the script's.
			if !strings.Contains(string(res.Trace[0].Result), "Ada Okafor") {
				t.Fatalf("the trace lacks the tool result: %.100s", res.Trace[0].Result)
			}
			if strings.Contains(res.ModelMessage, "Ada Okafor") || strings.Contains(res.ModelMessage, "eng-01") {
				t.Fatalf("the model message carries a tool result: %s", res.ModelMessage)
			}
		})
	}
}

func BenchmarkReplayExpenses(b *testing.B) {
	c, _ := record(b, expensesSource(b))
	req, _ := c.Replay()
	rp := NewReplayer(c)
	r, err := ptc.NewRunner(ptc.WithTools(rp.Tools()...))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := r.Execute(context.Background(), req)
		if err != nil || rp.Check(res) != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadExpenses(b *testing.B) {
	c, _ := record(b, expensesSource(b))
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReplayRecordedFailure(t *testing.T) {
	src := `const t = await tools.get_team_members({ department: "sales" });
throw new Error("stop after " + t.length)`
	c, orig := record(t, src)
	if orig.Error == nil || c.Final.Error == nil || c.Final.Error.Kind != "SCRIPT_ERROR" || c.Final.Error.Line != 2 {
		t.Fatalf("final %+v", c.Final)
	}
	if _, d := replay(t, c, nil); d != nil {
		t.Fatalf("divergence: %v", d)
	}
	_, d := replay(t, c, func(r *ptc.Request) { r.Source = strings.Replace(src, "stop after", "halt after", 1) })
	if d == nil || d.Reason != ReasonResult || !strings.Contains(d.Error(), `/error/message: "uncaught Error: stop after 8" → "uncaught Error: halt after 8"`) {
		t.Fatalf("divergence: %v", d)
	}
}

// TestDivergenceCounts checks that the count in a divergence agrees with
// its noun.
func TestDivergenceCounts(t *testing.T) {
	for _, tc := range []struct {
		calls int
		want  string
	}{{1, "(it has 1 call)"}, {2, "(it has 2 calls)"}, {0, "(it has 0 calls)"}} {
		d := &Divergence{Reason: ReasonExtra, Seq: int32(tc.calls) + 1, ActualTool: "t", RecordedCalls: tc.calls}
		if got := d.Summary(); !strings.HasSuffix(got, tc.want) {
			t.Errorf("%d calls: %q, want it to end with %q", tc.calls, got, tc.want)
		}
	}
}
