// Who on a team spent more on travel this quarter than their level allows?
//
// The TypeScript version of expenses.js, with the same logic and the same
// result. The script fetches every member's expense line items (about 2,000
// of them, 200 KB of JSON, for the engineering team) and returns only the
// handful of people over budget. Types are stripped, not checked.
//
// Input (optional): {"department": "engineering", "quarter": "Q3"}.
// Result: [{id, name, level, travel_total, travel_limit, over_by}], largest
// overspend first, amounts in USD rounded to cents.

type Department = "engineering" | "sales" | "marketing" | "support";
type Quarter = "Q1" | "Q2" | "Q3" | "Q4";
type Level = "junior" | "mid" | "senior" | "staff" | "principal";

interface Params {
  department?: Department;
  quarter?: Quarter;
}

/** One person, from get_team_members. */
interface TeamMember {
  id: string;
  name: string;
  level: Level;
}

/** One expense line item, from get_expenses. */
interface Expense {
  id: string;
  date: string;
  category: string;
  amount: number;
  currency: string;
}

/** A level's budget, from get_budget_by_level. */
interface Budget {
  level: Level;
  travel_limit: number;
}

interface OverBudget {
  id: string;
  name: string;
  level: string;
  travel_total: number;
  travel_limit: number;
  over_by: number;
}

const params: Params = (input as Params | null) || {};
const department: Department = params.department || "engineering";
const quarter: Quarter = params.quarter || "Q3";

const team = (await tools.get_team_members({ department })) as TeamMember[];

// Every member's expenses at once: the calls run concurrently.
const expenses = (await Promise.all(
  team.map((member) => tools.get_expenses({ member_id: member.id, quarter })),
)) as Expense[][];

// One budget lookup per distinct level.
const levels: Level[] = [...new Set(team.map((member) => member.level))];
const budgets = (await Promise.all(levels.map((level) => tools.get_budget_by_level({ level })))) as Budget[];

// Work in whole cents so that the sums are exact.
const toCents = (amount: number): number => Math.round(amount * 100);
const limitCents = new Map<string, number>(budgets.map((b): [string, number] => [b.level, toCents(b.travel_limit)]));

const over: OverBudget[] = [];
team.forEach((member: TeamMember, i: number) => {
  let travel = 0;
  for (const item of expenses[i]) {
    if (item.category === "travel") {
      travel += toCents(item.amount);
    }
  }
  const limit = limitCents.get(member.level) as number;
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

const items: number = expenses.reduce((n, list) => n + list.length, 0);
console.log(`${department} ${quarter}: ${over.length} of ${team.length} members over their travel budget (${items} line items checked)`);
return over;
