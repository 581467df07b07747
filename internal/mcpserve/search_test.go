package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/tools"
)

// TestSearch ranks the tools for a query and returns the matches with
// their declarations; bad arguments are isError saying what to change.
func TestSearch(t *testing.T) {
	var extra []tools.Tool
	for i := range 60 {
		extra = append(extra, tools.Tool{Definition: tools.Definition{Name: fmt.Sprintf("crm.lookup_%02d", i),
			Description: "Look up a customer record by account.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"account":{"type":"string"}}}`)},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
	}
	cs := connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t, extra...)}), nil)
	cases := []struct {
		name     string
		args     string
		isError  bool
		first    string // the best match
		count    int
		contains []string
	}{
		{name: "travel budget", args: `{"query":"travel budget"}`, first: "get_budget_by_level", count: 1,
			contains: []string{"get_budget_by_level(args: GetBudgetByLevelInput)", "interface GetBudgetByLevelOutput"}},
		{name: "expenses", args: `{"query":"expense line items of a member"}`, first: "get_expenses",
			contains: []string{"get_expenses(args: GetExpensesInput)"}},
		{name: "default limit", args: `{"query":"customer account"}`, count: mcpserve.DefaultSearchResults},
		{name: "limit", args: `{"query":"customer account","limit":3}`, count: 3},
		{name: "max limit", args: `{"query":"customer account","limit":50}`, count: 50},
		{name: "no match", args: `{"query":"weather forecast"}`, count: 0,
			contains: []string{`No tool matches "weather forecast"`, "- crm: lookup_00", "get_expenses"}},
		{name: "missing query", args: `{}`, isError: true, contains: []string{`"query" is missing`}},
		{name: "empty query", args: `{"query":" "}`, isError: true, contains: []string{`"query" is empty`}},
		{name: "query not a string", args: `{"query":["a"]}`, isError: true, contains: []string{"not an array"}},
		{name: "huge query", args: `{"query":"` + strings.Repeat("a ", 3000) + `"}`, isError: true, contains: []string{"more than the 4096 allowed"}},
		{name: "limit too large", args: `{"query":"x","limit":51}`, isError: true, contains: []string{"between 1 and 50"}},
		{name: "limit zero", args: `{"query":"x","limit":0}`, isError: true, contains: []string{"between 1 and 50"}},
		{name: "limit fraction", args: `{"query":"x","limit":2.5}`, isError: true, contains: []string{"whole number"}},
		{name: "unknown argument", args: `{"q":"x"}`, isError: true, contains: []string{`unknown argument "q"`, "query and limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, "search", tc.args)
			if res.IsError != tc.isError {
				t.Fatalf("isError %v: %s", res.IsError, text(res))
			}
			for _, w := range tc.contains {
				if !strings.Contains(text(res), w) {
					t.Errorf("text lacks %q:\n%s", w, text(res))
				}
			}
			if tc.isError {
				return
			}
			var matches []struct {
				Name  string
				Score float64
			}
			if err := json.Unmarshal(structured(t, res)["tools"], &matches); err != nil {
				t.Fatal(err)
			}
			if tc.count >= 0 && tc.first == "" && len(matches) != tc.count {
				t.Fatalf("%d matches, want %d", len(matches), tc.count)
			}
			if tc.first != "" && (len(matches) == 0 || matches[0].Name != tc.first || matches[0].Score <= 0) {
				t.Fatalf("matches %+v, want %s first", matches, tc.first)
			}
			if tc.count > 0 && len(matches) > 0 && !strings.Contains(text(res), "declare const tools") {
				t.Errorf("no declarations:\n%s", text(res))
			}
		})
	}
}
