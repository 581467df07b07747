package demo_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// Calling a demo tool's handler directly, as the bridge does once the
// arguments have passed the input schema.
func ExampleTools() {
	for _, t := range demo.Tools() {
		if t.Name != "get_budget_by_level" {
			continue
		}
		out, err := t.Handler(context.Background(), tools.Call{
			Tool:      t.Name,
			Arguments: json.RawMessage(`{"level":"senior"}`),
		})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(string(out))
	}
	// Output: {"level":"senior","travel_limit":3000.00}
}

// Offering the demo tools from a registry, for example a server's.
func ExampleTools_registry() {
	r := tools.NewRegistry()
	if err := r.Register(demo.Tools()...); err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(r.Names())

	expenses, _ := r.Lookup("get_expenses")
	_, err := expenses.Handler(context.Background(), tools.Call{
		Tool:      "get_expenses",
		Arguments: json.RawMessage(`{"member_id":"eng-99","quarter":"Q3"}`),
	})
	fmt.Println(err)
	// Output:
	// [get_budget_by_level get_expenses get_team_members]
	// not_found: no team member has id "eng-99": use an id returned by get_team_members
}
