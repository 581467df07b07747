// Package demo provides built-in demonstration tools backed by a small,
// deterministic fake company, so that ptc's examples run with nothing to set
// up:
//
//   - get_team_members({department}) returns [{id, name, level}]
//   - get_expenses({member_id, quarter}) returns [{id, date, category, amount, currency}]
//   - get_budget_by_level({level}) returns {level, travel_limit}
//
// The company is a pure function of this package's code: there is no clock,
// no randomness at run time and no state shared between the tool sets that
// Tools returns. Expense line items come from a fixed-seed generator, one
// stream per member and quarter of 2026, and are marshalled to JSON once per
// tool set, the first time they are asked for. The engineering department has
// 20 members and about 2,000 line items per quarter (about 200 KB of JSON
// for the whole team); sales, marketing and support are smaller.
//
// Every tool has strict input and output schemas (additionalProperties:
// false, required fields, enums). Departments, levels and quarters are enums,
// so the bridge rejects unknown values before a handler runs; an unknown
// member id is a *tools.Error with code "not_found".
//
// Package demo imports only the tools package.
package demo
