package ts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// expensesTools serves testdata/expenses_tools.json through the three
// tools that the expenses example calls.
func expensesTools(t *testing.T) map[string]func(any) any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "expenses_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Team     map[string][]map[string]any `json:"team"`
		Expenses map[string][]map[string]any `json:"expenses"`
		Budgets  []map[string]any            `json:"budgets"`
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	arg := func(args any, key string) string {
		m, _ := args.(map[string]any)
		s, _ := m[key].(string)
		return s
	}
	return map[string]func(any) any{
		"get_team_members": func(args any) any { return data.Team[arg(args, "department")] },
		"get_expenses":     func(args any) any { return data.Expenses[arg(args, "member_id")] },
		"get_budget_by_level": func(args any) any {
			for _, b := range data.Budgets {
				if b["level"] == arg(args, "level") {
					return b
				}
			}
			return nil
		},
	}
}

// TestExpensesExample runs examples/expenses.ts and examples/expenses.js on
// the same tool data and requires the same result and log.
func TestExpensesExample(t *testing.T) {
	tsSrc, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "expenses.ts"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := transpile(string(tsSrc))
	if err != nil {
		t.Fatalf("transpile examples/expenses.ts: %v", err)
	}
	tools := expensesTools(t)
	got := runProgram(t, p, `{"quarter":"Q3"}`, false, tools)
	if got.Rejected != nil {
		t.Fatalf("expenses.ts rejected: %s", rejectionStack(got.Rejected))
	}
	var over []map[string]any
	if err := json.Unmarshal([]byte(got.JSON), &over); err != nil || len(over) == 0 {
		t.Fatalf("expenses.ts result %s: want a non-empty list (%v)", got.JSON, err)
	}

	jsSrc, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "expenses.js"))
	if os.IsNotExist(err) {
		t.Skip("examples/expenses.js is not there to compare with")
	}
	if err != nil {
		t.Fatal(err)
	}
	// Plain JavaScript is valid TypeScript here, so the same path runs it.
	jp, err := transpile(string(jsSrc))
	if err != nil {
		t.Fatalf("transpile examples/expenses.js: %v", err)
	}
	want := runProgram(t, jp, `{"quarter":"Q3"}`, false, tools)
	if got.JSON != want.JSON {
		t.Errorf("expenses.ts and expenses.js differ:\n ts %s\n js %s", got.JSON, want.JSON)
	}
	if len(got.Logs) != 1 || len(want.Logs) != 1 || got.Logs[0] != want.Logs[0] {
		t.Errorf("logs differ:\n ts %q\n js %q", got.Logs, want.Logs)
	}
}
