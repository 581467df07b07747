package mcptest

import (
	"strings"
	"testing"
)

// MaxCodeBytes is the code bound the acceptance steps go one byte past
// (the executor's default source bound).
const MaxCodeBytes = 1 << 20

// AcceptanceSteps are the calls every acceptance test makes: a search, the
// expense example (src, with progress), a script error, a call to a tool
// the caller may not use (deniedCode), bad arguments, and a last call
// showing that the server keeps serving.
func AcceptanceSteps(src, deniedCode string) []Step {
	return []Step{
		{Name: "search", Tool: "search", Arguments: map[string]any{"query": "travel budget of a level"}},
		{Name: "expenses", Tool: "execute", Arguments: map[string]any{"code": src}, Progress: true},
		{Name: "script error", Tool: "execute", Arguments: map[string]any{"code": "const a = [];\nreturn a[0].x"}},
		{Name: "denied tool", Tool: "execute", Arguments: map[string]any{"code": deniedCode}},
		{Name: "missing code", Tool: "execute", Arguments: map[string]any{}},
		{Name: "code not a string", Tool: "execute", Arguments: map[string]any{"code": false}},
		{Name: "oversized code", Tool: "execute", Arguments: map[string]any{"code": strings.Repeat("/", MaxCodeBytes+1)}},
		{Name: "unknown language", Tool: "execute", Arguments: map[string]any{"code": "1", "language": "ruby"}},
		{Name: "still serving", Tool: "execute", Arguments: map[string]any{"code": "return [1, 2]"}},
	}
}

// CheckAcceptance checks a report of AcceptanceSteps: expenses is the
// expected result (compact JSON), denied the tool the caller may not use.
func CheckAcceptance(t *testing.T, r Report, expenses, denied string) {
	t.Helper()
	if r.ConnectError != nil {
		t.Fatalf("connect: %s", *r.ConnectError)
	}
	if len(r.Tools) != 2 || r.Tools[0].Name != "execute" || r.Tools[1].Name != "search" {
		t.Fatalf("tools %+v", r.Tools)
	}
	step := func(name string) StepResult {
		s, ok := r.Steps[name]
		if !ok || s.Error != "" {
			t.Fatalf("step %s: %+v", name, s)
		}
		return s
	}
	if s := step("search"); s.IsError || !strings.Contains(s.Text, "get_budget_by_level(args: GetBudgetByLevelInput)") {
		t.Errorf("search: %+v", s)
	}
	s := step("expenses")
	if s.IsError || s.Text != expenses || !strings.Contains(string(s.StructuredContent), `"result":[{"id":"eng-13"`) || s.Meta["ptc/stats"] == nil {
		t.Errorf("expenses: %+v", s)
	}
	// Every call reported started and finished, or a summary when
	// notifications had to be dropped.
	if n := len(s.Progress); n != 52 && (n == 0 || s.Progress[n-1].Message != "26 tool calls started, 26 finished") {
		t.Errorf("progress: %+v", s.Progress)
	}
	if len(s.Progress) != s.SDKProgress {
		t.Logf("the SDK's onprogress delivered %d of the %d notifications sent before the answer", s.SDKProgress, len(s.Progress))
	}
	for name, s := range r.Steps {
		if len(s.LateProgress) != 0 {
			t.Errorf("step %s: progress after the answer or for no call in flight: %+v", name, s.LateProgress)
		}
	}
	errors := map[string]string{
		"script error":      "SCRIPT_ERROR at line 2",
		"denied tool":       `unknown tool "` + denied + `"`,
		"missing code":      `"code" is missing`,
		"code not a string": `"code" must be a string`,
		"oversized code":    "more than the 1048576 allowed",
		"unknown language":  `language "ruby" is not supported`,
	}
	for name, want := range errors {
		if s := step(name); !s.IsError || !strings.Contains(s.Text, want) {
			t.Errorf("%s: %+v, want %q", name, s, want)
		}
	}
	if s := step("still serving"); s.IsError || s.Text != "[1,2]" {
		t.Errorf("still serving: %+v", s)
	}
}
