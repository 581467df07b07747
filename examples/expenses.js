// Who on a team spent more on travel this quarter than their level allows?
//
// The canonical programmatic tool calling example: the script fetches every
// member's expense line items (about 2,000 of them, 200 KB of JSON, for the
// engineering team) and returns only the handful of people over budget.
//
// Input (optional): {"department": "engineering", "quarter": "Q3"}.
// Result: [{id, name, level, travel_total, travel_limit, over_by}], largest
// overspend first, amounts in USD rounded to cents.

const params = input || {};
const department = params.department || "engineering";
const quarter = params.quarter || "Q3";

const team = await tools.get_team_members({ department });

// Every member's expenses at once: the calls run concurrently.
const expenses = await Promise.all(
  team.map((member) => tools.get_expenses({ member_id: member.id, quarter })),
);

// One budget lookup per distinct level.
const levels = [...new Set(team.map((member) => member.level))];
const budgets = await Promise.all(levels.map((level) => tools.get_budget_by_level({ level })));

// Work in whole cents so that the sums are exact.
const toCents = (amount) => Math.round(amount * 100);
const limitCents = new Map(budgets.map((b) => [b.level, toCents(b.travel_limit)]));

const over = [];
team.forEach((member, i) => {
  let travel = 0;
  for (const item of expenses[i]) {
    if (item.category === "travel") {
      travel += toCents(item.amount);
    }
  }
  const limit = limitCents.get(member.level);
  if (travel > limit) {
    over.push({
      id: member.id,
      name: member.name,
      level: member.level,
      travel_total: travel / 100,
      travel_limit: limit / 100,
      over_by: (travel - limit) / 100,
    });
  }
});

over.sort((a, b) => b.over_by - a.over_by || (a.id < b.id ? -1 : 1));

const items = expenses.reduce((n, list) => n + list.length, 0);
console.log(`${department} ${quarter}: ${over.length} of ${team.length} members over their travel budget (${items} line items checked)`);
return over;
