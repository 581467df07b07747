package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/ptcrun/ptc/tools"
)

// Error codes the demo handlers return in a *tools.Error, besides
// tools.CodeInvalidArguments for arguments the input schema would have
// refused (for handlers called without the bridge in front of them).
const (
	// codeNotFound: the member id names no member.
	codeNotFound = "not_found"
	// codeInternal: the demo data could not be built.
	codeInternal = "internal"
)

// Tools returns a fresh set of the demo tools: get_team_members,
// get_expenses and get_budget_by_level. The tools of one set share their
// data, which is built once per set (expenses on first use) and never
// shared with another set. The handlers are safe for concurrent use.
//
// The tools are marked TrustOutput: the package's tests check every result
// they can produce against its output schema, so the bridge does not
// re-check each call. They are also Inline: they compute in memory, return
// at once and honour ctx.
func Tools() []tools.Tool {
	c := newCompany()
	return []tools.Tool{
		{
			Definition: tools.Definition{
				Name: "get_team_members",
				Description: "List the members of a department: [{id, name, level}], sorted by id. " +
					"Departments: engineering, sales, marketing, support.",
				InputSchema:  json.RawMessage(teamMembersInput),
				OutputSchema: json.RawMessage(teamMembersOutput),
			},
			Handler:     c.getTeamMembers,
			TrustOutput: true,
			Inline:      true,
		},
		{
			Definition: tools.Definition{
				Name: "get_expenses",
				Description: "List a member's expense line items for a quarter of 2026: " +
					"[{id, date, category, amount, currency}], in date order. Amounts are in USD. " +
					"Fails with code not_found for an unknown member id.",
				InputSchema:  json.RawMessage(expensesInput),
				OutputSchema: json.RawMessage(expensesOutput),
			},
			Handler:     c.getExpenses,
			TrustOutput: true,
			Inline:      true,
		},
		{
			Definition: tools.Definition{
				Name: "get_budget_by_level",
				Description: "Get the budget of a job level: {level, travel_limit}, where travel_limit is " +
					"the travel budget per member per quarter in USD.",
				InputSchema:  json.RawMessage(budgetInput),
				OutputSchema: json.RawMessage(budgetOutput),
			},
			Handler:     c.getBudgetByLevel,
			TrustOutput: true,
			Inline:      true,
		},
	}
}

func (c *company) getTeamMembers(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	var args struct {
		Department string `json:"department"`
	}
	if err := c.begin(ctx, "get_team_members", call.Arguments, &args); err != nil {
		return nil, err
	}
	team, ok := c.teams[args.Department]
	if !ok {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "unknown department %q: use one of %s",
			args.Department, strings.Join(departmentNames[:], ", "))
	}
	return clone(team), nil
}

func (c *company) getExpenses(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	var args struct {
		MemberID string `json:"member_id"`
		Quarter  string `json:"quarter"`
	}
	if err := c.begin(ctx, "get_expenses", call.Arguments, &args); err != nil {
		return nil, err
	}
	q := -1
	for i, name := range quarterNames {
		if args.Quarter == name {
			q = i
		}
	}
	if q < 0 {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "unknown quarter %q: use one of %s",
			args.Quarter, strings.Join(quarterNames[:], ", "))
	}
	m, ok := c.members[args.MemberID]
	if !ok {
		return nil, tools.Errorf(codeNotFound, "no team member has id %q: use an id returned by get_team_members",
			truncate(args.MemberID, 64))
	}
	b, err := m.expensesJSON(q)
	if err != nil {
		return nil, tools.Errorf(codeInternal, "the expenses of %s could not be built: %v", m.id, err)
	}
	return clone(b), nil
}

func (c *company) getBudgetByLevel(ctx context.Context, call tools.Call) (json.RawMessage, error) {
	var args struct {
		Level string `json:"level"`
	}
	if err := c.begin(ctx, "get_budget_by_level", call.Arguments, &args); err != nil {
		return nil, err
	}
	b, ok := c.budgets[args.Level]
	if !ok {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "unknown level %q: use one of %s",
			args.Level, strings.Join(levelNames[:], ", "))
	}
	return clone(b), nil
}

// begin does what every handler does first: give up if ctx is done, report
// broken data, and decode the arguments strictly into args.
func (c *company) begin(ctx context.Context, tool string, raw json.RawMessage, args any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.err != nil {
		return tools.Errorf(codeInternal, "the demo data could not be built: %v", c.err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(args); err != nil {
		return argsError(tool, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tools.Errorf(tools.CodeInvalidArguments, "arguments of %s have data after the JSON object; pass one JSON object", tool)
	}
	return nil
}

// clone copies b, so that a caller that changes a result cannot change the
// data of later calls.
func clone(b []byte) json.RawMessage {
	return append(json.RawMessage(nil), b...)
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
