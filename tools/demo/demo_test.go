package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

var update = flag.Bool("update", false, "rewrite examples/expenses.expected.json from the tools' outputs")

// goldenPath is the committed result of examples/expenses.js.
var goldenPath = filepath.Join("..", "..", "examples", "expenses.expected.json")

var (
	departments = []string{"engineering", "sales", "marketing", "support"}
	levels      = []string{"junior", "mid", "senior", "staff", "principal"}
	quarters    = []string{"Q1", "Q2", "Q3", "Q4"}
)

// set is one Tools() set, compiled, by name.
type set map[string]*tools.Compiled

func newSet(t testing.TB) set {
	t.Helper()
	s := set{}
	for _, tool := range demo.Tools() {
		c, err := tools.Compile(tool)
		if err != nil {
			t.Fatalf("compile %s: %v", tool.Name, err)
		}
		s[tool.Name] = c
	}
	return s
}

// call runs a handler directly, as the bridge would after validation.
func (s set) call(ctx context.Context, name string, args any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return s[name].Handler(ctx, tools.Call{ExecutionID: "test", Seq: 1, Tool: name, Arguments: raw})
}

func (s set) mustCall(t testing.TB, name string, args any) json.RawMessage {
	t.Helper()
	out, err := s.call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	return out
}

type member struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Level string `json:"level"`
}

type expense struct {
	ID       string      `json:"id"`
	Date     string      `json:"date"`
	Category string      `json:"category"`
	Amount   json.Number `json:"amount"`
	Currency string      `json:"currency"`
}

type budget struct {
	Level       string      `json:"level"`
	TravelLimit json.Number `json:"travel_limit"`
}

func decode[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return v
}

func (s set) team(t testing.TB, dept string) []member {
	return decode[[]member](t, s.mustCall(t, "get_team_members", map[string]string{"department": dept}))
}

func (s set) expenses(t testing.TB, id, quarter string) []expense {
	return decode[[]expense](t, s.mustCall(t, "get_expenses", map[string]string{"member_id": id, "quarter": quarter}))
}

// parseCents parses a JSON number with at most two decimals into cents.
func parseCents(t testing.TB, n json.Number) int64 {
	t.Helper()
	s := n.String()
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 {
		t.Fatalf("amount %s has more than two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || strings.HasPrefix(s, "-") {
		t.Fatalf("amount %s is not a positive decimal", s)
	}
	return w*100 + f
}

// everyCall lists the arguments of every successful call the demo tools
// can answer.
func everyCall(t testing.TB, s set) []struct {
	name string
	args map[string]string
} {
	var calls []struct {
		name string
		args map[string]string
	}
	add := func(name string, args map[string]string) {
		calls = append(calls, struct {
			name string
			args map[string]string
		}{name, args})
	}
	for _, d := range departments {
		add("get_team_members", map[string]string{"department": d})
		for _, m := range s.team(t, d) {
			for _, q := range quarters {
				add("get_expenses", map[string]string{"member_id": m.ID, "quarter": q})
			}
		}
	}
	for _, l := range levels {
		add("get_budget_by_level", map[string]string{"level": l})
	}
	return calls
}

func TestToolsDefinitions(t *testing.T) {
	s := newSet(t)
	want := []string{"get_budget_by_level", "get_expenses", "get_team_members"}
	var got []string
	for name, c := range s {
		got = append(got, name)
		if c.Description == "" {
			t.Errorf("%s has no description", name)
		}
		if c.Output == nil {
			t.Errorf("%s has no output schema", name)
		}
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tool names = %v, want %v", got, want)
	}
}

func TestOutputsMatchSchemas(t *testing.T) {
	s := newSet(t)
	for _, c := range everyCall(t, s) {
		out := s.mustCall(t, c.name, c.args)
		vs, err := s[c.name].Output.Validate(out)
		if err != nil {
			t.Fatalf("%s(%v) returned invalid JSON: %v", c.name, c.args, err)
		}
		if len(vs) > 0 {
			t.Errorf("%s(%v) does not match its output schema: %s", c.name, c.args, tools.FormatViolations(vs))
		}
	}
}

func TestInputSchemasRejectBadArguments(t *testing.T) {
	s := newSet(t)
	tests := []struct {
		name string
		tool string
		args string
	}{
		{"unknown department", "get_team_members", `{"department":"legal"}`},
		{"department wrong case", "get_team_members", `{"department":"Engineering"}`},
		{"department missing", "get_team_members", `{}`},
		{"department extra property", "get_team_members", `{"department":"sales","limit":3}`},
		{"unknown quarter", "get_expenses", `{"member_id":"eng-01","quarter":"Q5"}`},
		{"quarter missing", "get_expenses", `{"member_id":"eng-01"}`},
		{"member id empty", "get_expenses", `{"member_id":"","quarter":"Q1"}`},
		{"member id number", "get_expenses", `{"member_id":7,"quarter":"Q1"}`},
		{"member id too long", "get_expenses", `{"member_id":"` + strings.Repeat("x", 65) + `","quarter":"Q1"}`},
		{"unknown level", "get_budget_by_level", `{"level":"intern"}`},
		{"level null", "get_budget_by_level", `{"level":null}`},
		{"arguments not an object", "get_budget_by_level", `["senior"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := s[tt.tool].Input.Validate(json.RawMessage(tt.args))
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if len(vs) == 0 {
				t.Fatalf("%s accepted %s", tt.tool, tt.args)
			}
		})
	}
}

func TestInputSchemasAcceptGoodArguments(t *testing.T) {
	s := newSet(t)
	for _, c := range everyCall(t, s) {
		raw, _ := json.Marshal(c.args)
		vs, err := s[c.name].Input.Validate(raw)
		if err != nil || len(vs) > 0 {
			t.Errorf("%s refused %s: %v %s", c.name, raw, err, tools.FormatViolations(vs))
		}
	}
}

func TestHandlerErrors(t *testing.T) {
	s := newSet(t)
	tests := []struct {
		name     string
		tool     string
		args     string
		wantCode string
		wantMsg  string
	}{
		{"unknown member", "get_expenses", `{"member_id":"eng-99","quarter":"Q3"}`, "not_found", `no team member has id "eng-99"`},
		{"member of no department", "get_expenses", `{"member_id":"ceo","quarter":"Q1"}`, "not_found", "get_team_members"},
		// The bridge refuses the following before a handler runs; called
		// directly, the handlers still classify them.
		{"unknown department", "get_team_members", `{"department":"legal"}`, "invalid_arguments", "use one of engineering, sales"},
		{"unknown level", "get_budget_by_level", `{"level":"intern"}`, "invalid_arguments", "use one of junior"},
		{"unknown quarter", "get_expenses", `{"member_id":"eng-01","quarter":"Q5"}`, "invalid_arguments", "use one of Q1"},
		{"empty arguments", "get_budget_by_level", ``, "invalid_arguments", `unknown level ""`},
		{"unknown field", "get_team_members", `{"department":"sales","x":1}`, "invalid_arguments", `unknown field "x"`},
		{"wrong type", "get_expenses", `{"member_id":1,"quarter":"Q1"}`, "invalid_arguments", `arguments of get_expenses are invalid: "member_id" must be a string, not a number`},
		{"number out of range", "get_budget_by_level", `{"level":1e400}`, "invalid_arguments", `"level" must be a string, not a number`},
		{"not an object", "get_team_members", `[1]`, "invalid_arguments", `the arguments must be an object, not an array`},
		{"not JSON", "get_expenses", `{"member_id":`, "invalid_arguments", "arguments of get_expenses are invalid: they are not JSON"},
		{"trailing data", "get_budget_by_level", `{"level":"mid"} {}`, "invalid_arguments", "data after the JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s[tt.tool].Handler(context.Background(), tools.Call{Tool: tt.tool, Arguments: json.RawMessage(tt.args)})
			var te *tools.Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v (result %s), want a *tools.Error", err, out)
			}
			if te.Code != tt.wantCode || !strings.Contains(te.Message, tt.wantMsg) {
				t.Fatalf("err = %q / %q, want code %q and a message containing %q", te.Code, te.Message, tt.wantCode, tt.wantMsg)
			}
			// encoding/json's words name Go types and struct fields.
			for _, w := range []string{"json:", "Go ", "struct", "unmarshal"} {
				if strings.Contains(te.Message, w) {
					t.Fatalf("message %q shows Go's text %q", te.Message, w)
				}
			}
		})
	}
}

func TestHandlersHonourCancellation(t *testing.T) {
	s := newSet(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		want error
		tool string
		args map[string]string
	}{
		{"team cancelled", cancelled, context.Canceled, "get_team_members", map[string]string{"department": "sales"}},
		{"expenses cancelled", cancelled, context.Canceled, "get_expenses", map[string]string{"member_id": "eng-01", "quarter": "Q3"}},
		{"budget cancelled", cancelled, context.Canceled, "get_budget_by_level", map[string]string{"level": "mid"}},
		{"expenses past deadline", expired, context.DeadlineExceeded, "get_expenses", map[string]string{"member_id": "sal-01", "quarter": "Q1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := s.call(tt.ctx, tt.tool, tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v (result %d bytes), want %v", err, len(out), tt.want)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	a, b := newSet(t), newSet(t)
	calls := everyCall(t, a)
	outA := make([]json.RawMessage, len(calls))
	for i, c := range calls {
		outA[i] = a.mustCall(t, c.name, c.args)
	}
	// The second set is asked in the opposite order: results must not
	// depend on which calls came first.
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if got := b.mustCall(t, c.name, c.args); !bytes.Equal(got, outA[i]) {
			t.Fatalf("%s(%v) differs between two Tools() sets", c.name, c.args)
		}
	}
}

func TestResultsAreCopies(t *testing.T) {
	s := newSet(t)
	args := map[string]string{"member_id": "eng-02", "quarter": "Q2"}
	first := s.mustCall(t, "get_expenses", args)
	want := bytes.Clone(first)
	for i := range first {
		first[i] = 'x'
	}
	if got := s.mustCall(t, "get_expenses", args); !bytes.Equal(got, want) {
		t.Fatal("changing a result changed the next result")
	}
}

func TestConcurrentFirstCalls(t *testing.T) {
	s := newSet(t)
	const n = 16
	outs := make([]json.RawMessage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outs[i], errs[i] = s.call(context.Background(), "get_expenses", map[string]string{"member_id": "eng-11", "quarter": "Q4"})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !bytes.Equal(outs[i], outs[0]) {
			t.Fatalf("call %d returned different bytes", i)
		}
	}
}

func TestSizes(t *testing.T) {
	s := newSet(t)
	tests := []struct {
		dept               string
		members            int
		minItems, maxItems int // per quarter, whole department
	}{
		{"engineering", 20, 1800, 2200},
		{"sales", 8, 160, 280},
		{"marketing", 6, 120, 210},
		{"support", 7, 140, 245},
	}
	for _, tt := range tests {
		t.Run(tt.dept, func(t *testing.T) {
			team := s.team(t, tt.dept)
			if len(team) != tt.members {
				t.Fatalf("%s has %d members, want %d", tt.dept, len(team), tt.members)
			}
			for _, q := range quarters {
				items, size := 0, 0
				for _, m := range team {
					out := s.mustCall(t, "get_expenses", map[string]string{"member_id": m.ID, "quarter": q})
					size += len(out)
					items += len(decode[[]expense](t, out))
				}
				if items < tt.minItems || items > tt.maxItems {
					t.Errorf("%s %s: %d line items, want %d..%d", tt.dept, q, items, tt.minItems, tt.maxItems)
				}
				if tt.dept == "engineering" && q == "Q3" {
					t.Logf("engineering Q3: %d members, %d line items, %d bytes of JSON over %d get_expenses calls", len(team), items, size, len(team))
					if size < 150_000 || size > 260_000 {
						t.Errorf("engineering Q3 expenses are %d bytes of JSON, want about 200 KB", size)
					}
				}
			}
		})
	}
}

func TestExpenseProperties(t *testing.T) {
	s := newSet(t)
	seen := map[string]bool{}
	for _, d := range departments {
		for _, m := range s.team(t, d) {
			for qi, q := range quarters {
				first := time.Date(2026, time.Month(3*qi+1), 1, 0, 0, 0, 0, time.UTC)
				end := first.AddDate(0, 3, 0)
				prev := ""
				for _, e := range s.expenses(t, m.ID, q) {
					if seen[e.ID] {
						t.Fatalf("expense id %s appears twice", e.ID)
					}
					seen[e.ID] = true
					day, err := time.Parse(time.DateOnly, e.Date)
					if err != nil || day.Before(first) || !day.Before(end) {
						t.Fatalf("%s %s: date %s is not in %s 2026", m.ID, e.ID, e.Date, q)
					}
					if e.Date < prev {
						t.Fatalf("%s %s: expenses are not in date order", m.ID, q)
					}
					prev = e.Date
					if c := parseCents(t, e.Amount); c <= 0 {
						t.Fatalf("%s: amount %s is not positive", e.ID, e.Amount)
					}
				}
			}
		}
	}
}

func TestRegister(t *testing.T) {
	r := tools.NewRegistry()
	if err := r.Register(demo.Tools()...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got, want := strings.Join(r.Names(), ","), "get_budget_by_level,get_expenses,get_team_members"; got != want {
		t.Fatalf("Names() = %s, want %s", got, want)
	}
	if err := r.Register(demo.Tools()...); err == nil || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("second Register: err = %v, want an already registered error", err)
	}
}

// overBudget is one element of examples/expenses.js's result.
type overBudget struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Level       string  `json:"level"`
	TravelTotal float64 `json:"travel_total"`
	TravelLimit float64 `json:"travel_limit"`
	OverBy      float64 `json:"over_by"`
}

// expectedExpenses computes what examples/expenses.js returns for a
// department and quarter, from the tools' JSON outputs alone.
func expectedExpenses(t testing.TB, s set, dept, quarter string) []overBudget {
	t.Helper()
	limits := map[string]int64{}
	out := []overBudget{}
	overCents := map[string]int64{}
	for _, m := range s.team(t, dept) {
		if _, ok := limits[m.Level]; !ok {
			b := decode[budget](t, s.mustCall(t, "get_budget_by_level", map[string]string{"level": m.Level}))
			limits[m.Level] = parseCents(t, b.TravelLimit)
		}
		var travel int64
		for _, e := range s.expenses(t, m.ID, quarter) {
			if e.Category == "travel" {
				travel += parseCents(t, e.Amount)
			}
		}
		limit := limits[m.Level]
		if travel <= limit {
			continue
		}
		overCents[m.ID] = travel - limit
		out = append(out, overBudget{
			ID: m.ID, Name: m.Name, Level: m.Level,
			TravelTotal: float64(travel) / 100,
			TravelLimit: float64(limit) / 100,
			OverBy:      float64(travel-limit) / 100,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := overCents[out[i].ID], overCents[out[j].ID]
		if a != b {
			return a > b
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func TestExpensesExampleGolden(t *testing.T) {
	got := expectedExpenses(t, newSet(t), "engineering", "Q3")
	if n := len(got); n < 3 || n > 6 {
		t.Fatalf("%d of 20 engineering members are over their Q3 travel budget, want 3..6", n)
	}
	rendered, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	rendered = append(rendered, '\n')
	if *update {
		if err := os.WriteFile(goldenPath, rendered, 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read golden (run go test ./tools/demo -run Golden -update to create it): %v", err)
	}
	if !bytes.Equal(rendered, want) {
		t.Fatalf("%s is stale (run go test ./tools/demo -run Golden -update):\ngot:\n%s\nwant:\n%s", goldenPath, rendered, want)
	}
}

func TestOtherQuartersHaveOverspenders(t *testing.T) {
	// The example's input may pick another department or quarter; each
	// combination should still have a story to tell for some of them.
	s := newSet(t)
	total := 0
	for _, d := range departments {
		for _, q := range quarters {
			total += len(expectedExpenses(t, s, d, q))
		}
	}
	if total == 0 {
		t.Fatal("no member of any department is ever over budget")
	}
	t.Logf("%d member-quarters over the travel budget across the company", total)
}

func BenchmarkGetExpenses(b *testing.B) {
	s := newSet(b)
	h := s["get_expenses"].Handler
	call := tools.Call{Tool: "get_expenses", Arguments: json.RawMessage(`{"member_id":"eng-07","quarter":"Q3"}`)}
	ctx := context.Background()
	out, err := h(ctx, call) // warm: the first call generates the data
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := h(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetExpensesFirstCall(b *testing.B) {
	call := tools.Call{Tool: "get_expenses", Arguments: json.RawMessage(`{"member_id":"eng-07","quarter":"Q3"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := newSet(b)
		b.StartTimer()
		if _, err := s["get_expenses"].Handler(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExpenseWorkload is the tool side of examples/expenses.js: one
// team listing, 20 expense listings and the budgets of the distinct levels.
func BenchmarkExpenseWorkload(b *testing.B) {
	s := newSet(b)
	ctx := context.Background()
	team := s.team(b, "engineering")
	var calls []struct {
		h    tools.Handler
		call tools.Call
	}
	add := func(name, args string) {
		calls = append(calls, struct {
			h    tools.Handler
			call tools.Call
		}{s[name].Handler, tools.Call{Tool: name, Arguments: json.RawMessage(args)}})
	}
	add("get_team_members", `{"department":"engineering"}`)
	for _, m := range team {
		add("get_expenses", `{"member_id":"`+m.ID+`","quarter":"Q3"}`)
	}
	for _, l := range levels {
		add("get_budget_by_level", `{"level":"`+l+`"}`)
	}
	var size int64
	for _, c := range calls {
		out, err := c.h(ctx, c.call)
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(out))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, c := range calls {
			if _, err := c.h(ctx, c.call); err != nil {
				b.Fatal(err)
			}
		}
	}
}
