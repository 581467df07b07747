// Command expenses is the expense analysis of examples/expenses.js as a Go
// WebAssembly guest: who on a team spent more on travel this quarter than
// their level allows? It fetches every member's expense line items with one
// batch call and returns only the members over budget.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -o expenses.wasm ./examples/wasm/expenses
//
// Input (optional): {"department": "engineering", "quarter": "Q3"}.
// Result: [{id, name, level, travel_total, travel_limit, over_by}], largest
// overspend first, amounts in USD rounded to cents.
package main

import (
	"fmt"
	"math"
	"sort"

	ptc "github.com/ptcrun/ptc/bridge/guest"
)

type member struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Level string `json:"level"`
}

type item struct {
	Category string  `json:"category"`
	Amount   float64 `json:"amount"`
}

type budget struct {
	Level       string  `json:"level"`
	TravelLimit float64 `json:"travel_limit"`
}

type overspend struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Level       string  `json:"level"`
	TravelTotal float64 `json:"travel_total"`
	TravelLimit float64 `json:"travel_limit"`
	OverBy      float64 `json:"over_by"`
	overCents   int64
}

// cents rounds a USD amount to whole cents, half up (as JavaScript's
// Math.round does), so that sums are exact.
func cents(amount float64) int64 { return int64(math.Floor(amount*100 + 0.5)) }

func main() {
	var params struct {
		Department string `json:"department"`
		Quarter    string `json:"quarter"`
	}
	if err := ptc.Input(&params); err != nil {
		ptc.Fail(err)
	}
	if params.Department == "" {
		params.Department = "engineering"
	}
	if params.Quarter == "" {
		params.Quarter = "Q3"
	}

	var team []member
	if err := ptc.Call("get_team_members", map[string]string{"department": params.Department}, &team); err != nil {
		ptc.Fail(err)
	}

	// Every member's expenses at once: one batch, run concurrently.
	reqs := make([]ptc.Request, len(team))
	for i, m := range team {
		reqs[i] = ptc.Request{Tool: "get_expenses", Args: map[string]string{"member_id": m.ID, "quarter": params.Quarter}}
	}
	expenses := make([][]item, len(team))
	for i, r := range ptc.CallAll(reqs) {
		if err := r.Decode(&expenses[i]); err != nil {
			ptc.Fail(err)
		}
	}

	// One budget lookup per distinct level.
	var levels []string
	seen := map[string]bool{}
	for _, m := range team {
		if !seen[m.Level] {
			seen[m.Level] = true
			levels = append(levels, m.Level)
		}
	}
	breqs := make([]ptc.Request, len(levels))
	for i, l := range levels {
		breqs[i] = ptc.Request{Tool: "get_budget_by_level", Args: map[string]string{"level": l}}
	}
	limits := map[string]int64{}
	for _, r := range ptc.CallAll(breqs) {
		var b budget
		if err := r.Decode(&b); err != nil {
			ptc.Fail(err)
		}
		limits[b.Level] = cents(b.TravelLimit)
	}

	over := []overspend{}
	items := 0
	for i, m := range team {
		var travel int64
		for _, it := range expenses[i] {
			if it.Category == "travel" {
				travel += cents(it.Amount)
			}
		}
		items += len(expenses[i])
		limit, ok := limits[m.Level]
		if !ok {
			ptc.Fail(fmt.Errorf("no travel budget for level %q", m.Level))
		}
		if travel > limit {
			over = append(over, overspend{
				ID: m.ID, Name: m.Name, Level: m.Level,
				TravelTotal: float64(travel) / 100,
				TravelLimit: float64(limit) / 100,
				OverBy:      float64(travel-limit) / 100,
				overCents:   travel - limit,
			})
		}
	}
	sort.Slice(over, func(i, j int) bool {
		if over[i].overCents != over[j].overCents {
			return over[i].overCents > over[j].overCents
		}
		return over[i].ID < over[j].ID
	})

	ptc.Logf("%s %s: %d of %d members over their travel budget (%d line items checked)",
		params.Department, params.Quarter, len(over), len(team), items)
	if err := ptc.Return(over); err != nil {
		ptc.Fail(err)
	}
}
