// The demo company of tools/demo (Go), ported so that the tests can serve
// the same three tools from the client: get_team_members, get_expenses and
// get_budget_by_level. The data comes from the same fixed-seed generator
// (SplitMix64 seeded by FNV-1a), draw for draw, so the expense example
// gives the same result whichever side serves the tools. The tests check
// the definitions against the server's (ListTools) and the example's
// result against examples/expenses.expected.json.

import { ToolError, type ClientTool } from "@ptcrun/client";

const year = 2026;
const seedTag = "ptc-demo-company/v2";
const departmentNames = ["engineering", "sales", "marketing", "support"];
const levelNames = ["junior", "mid", "senior", "staff", "principal"];
const travelLimits = [150000, 200000, 300000, 400000, 500000]; // cents per quarter, by level
const otherCategories: Array<[name: string, weight: number, lo: number, hi: number]> = [
  ["meals", 35, 800, 9500],
  ["lodging", 10, 8900, 42000],
  ["software", 15, 900, 49900],
  ["hardware", 5, 2500, 189900],
  ["training", 5, 4900, 129900],
  ["office", 20, 300, 12000],
  ["communications", 10, 1500, 9000],
];
const quarterNames = ["Q1", "Q2", "Q3", "Q4"];
const roster: Array<[dept: string, id: string, name: string, level: number]> = [
  ["engineering", "eng-01", "Ada Okafor", 4], ["engineering", "eng-02", "Bruno Silva", 3],
  ["engineering", "eng-03", "Chen Wei", 2], ["engineering", "eng-04", "Dana Kowalski", 1],
  ["engineering", "eng-05", "Elif Yilmaz", 0], ["engineering", "eng-06", "Farid Haddad", 2],
  ["engineering", "eng-07", "Grace Mensah", 1], ["engineering", "eng-08", "Hiro Tanaka", 3],
  ["engineering", "eng-09", "Ines Moreau", 1], ["engineering", "eng-10", "Jonas Berg", 0],
  ["engineering", "eng-11", "Kavya Rao", 2], ["engineering", "eng-12", "Liam O'Brien", 1],
  ["engineering", "eng-13", "Maya Cohen", 4], ["engineering", "eng-14", "Nikolai Petrov", 2],
  ["engineering", "eng-15", "Olivia Grant", 0], ["engineering", "eng-16", "Pablo Ortega", 1],
  ["engineering", "eng-17", "Quinn Harper", 3], ["engineering", "eng-18", "Rosa Jiménez", 1],
  ["engineering", "eng-19", "Samir Khan", 2], ["engineering", "eng-20", "Tara Lindqvist", 0],
  ["sales", "sal-01", "Uma Patel", 2], ["sales", "sal-02", "Victor Lemaire", 1],
  ["sales", "sal-03", "Wendy Zhao", 0], ["sales", "sal-04", "Xavier Dubois", 3],
  ["sales", "sal-05", "Yara Nasser", 1], ["sales", "sal-06", "Zoe Adams", 0],
  ["sales", "sal-07", "Amir Farouk", 2], ["sales", "sal-08", "Beatriz Costa", 4],
  ["marketing", "mkt-01", "Caleb Novak", 2], ["marketing", "mkt-02", "Daria Ivanova", 1],
  ["marketing", "mkt-03", "Emeka Obi", 0], ["marketing", "mkt-04", "Freya Nilsson", 3],
  ["marketing", "mkt-05", "Gabriel Santos", 1], ["marketing", "mkt-06", "Hana Sato", 0],
  ["support", "sup-01", "Isaac Levy", 1], ["support", "sup-02", "Julia Becker", 0],
  ["support", "sup-03", "Kofi Asante", 2], ["support", "sup-04", "Lena Fischer", 0],
  ["support", "sup-05", "Mateo Rossi", 1], ["support", "sup-06", "Nadia Rahman", 3],
  ["support", "sup-07", "Oscar Eriksson", 0],
];

const mask = (1n << 64n) - 1n;

/** Rng is SplitMix64, as in tools/demo. */
class Rng {
  private s: bigint;
  constructor(key: string) {
    // FNV-1a, 64-bit.
    let h = 0xcbf29ce484222325n;
    for (const b of Buffer.from(key, "utf8")) {
      h ^= BigInt(b);
      h = (h * 0x100000001b3n) & mask;
    }
    this.s = h;
  }
  private next(): bigint {
    this.s = (this.s + 0x9e3779b97f4a7c15n) & mask;
    let z = this.s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask;
    return z ^ (z >> 31n);
  }
  intn(n: number): number {
    return Number(this.next() % BigInt(n));
  }
}

const div = (a: number, b: number) => Math.trunc(a / b);

function split(r: Rng, total: number, n: number): number[] {
  const weights = Array.from({ length: n }, () => 20 + r.intn(81));
  const sum = weights.reduce((a, b) => a + b, 0);
  const parts = weights.map((w) => div(total * w, sum));
  parts[n - 1] += total - parts.reduce((a, b) => a + b, 0);
  return parts;
}

interface Expense { id: string; date: string; category: string; amount: number; currency: string }

function generateExpenses(dept: string, id: string, level: number, q: number): Expense[] {
  const r = new Rng(`${seedTag}/${id}/${quarterNames[q]}`);
  let n = 20 + r.intn(16);
  if (dept === "engineering") n = 90 + r.intn(21);
  const limit = travelLimits[level];
  const permille = r.intn(100) < 20 ? 1030 + r.intn(571) : 300 + r.intn(671);
  const travelTotal = div(limit * permille, 1000) + r.intn(1000);
  const nTravel = div(n * 15, 100) + r.intn(5);
  const items: Array<{ category: string; cents: number }> = split(r, travelTotal, nTravel).map((c) => ({ category: "travel", cents: c }));
  const totalWeight = otherCategories.reduce((a, c) => a + c[1], 0);
  while (items.length < n) {
    let w = r.intn(totalWeight);
    for (const [name, weight, lo, hi] of otherCategories) {
      if (w < weight) {
        items.push({ category: name, cents: lo + r.intn(hi - lo + 1) });
        break;
      }
      w -= weight;
    }
  }
  const first = Date.UTC(year, 3 * q, 1);
  const days = Math.round((Date.UTC(year, 3 * q + 3, 1) - first) / 86400000);
  const day = items.map(() => r.intn(days));
  const order = items.map((_, i) => i).sort((a, b) => day[a] - day[b] || a - b);
  return order.map((i, pos) => ({
    id: `exp-${id}-q${q + 1}-${String(pos + 1).padStart(3, "0")}`,
    date: new Date(first + day[i] * 86400000).toISOString().slice(0, 10),
    category: items[i].category,
    amount: items[i].cents / 100,
    currency: "USD",
  }));
}

// The schemas of tools/demo/schemas.go.
const levelEnum = { type: "string", enum: levelNames };
export const schemas = {
  teamMembersInput: {
    type: "object",
    properties: { department: { type: "string", enum: departmentNames, description: "The department whose members to list." } },
    required: ["department"],
    additionalProperties: false,
  },
  teamMembersOutput: {
    type: "array",
    items: {
      type: "object",
      properties: {
        id: { type: "string", pattern: "^[a-z]{3}-[0-9]{2}$", description: "The member id, e.g. eng-07." },
        name: { type: "string", minLength: 1 },
        level: levelEnum,
      },
      required: ["id", "name", "level"],
      additionalProperties: false,
    },
  },
  expensesInput: {
    type: "object",
    properties: {
      member_id: { type: "string", minLength: 1, maxLength: 64, description: "A member id returned by get_team_members, e.g. eng-07." },
      quarter: { type: "string", enum: quarterNames, description: "The quarter of 2026." },
    },
    required: ["member_id", "quarter"],
    additionalProperties: false,
  },
  expensesOutput: {
    type: "array",
    items: {
      type: "object",
      properties: {
        id: { type: "string", minLength: 1 },
        date: { type: "string", pattern: "^2026-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$", description: "The date of the expense, YYYY-MM-DD." },
        category: { type: "string", enum: ["travel", "meals", "lodging", "software", "hardware", "training", "office", "communications"] },
        amount: { type: "number", exclusiveMinimum: 0, multipleOf: 0.01, description: "The amount, with two decimals." },
        currency: { type: "string", enum: ["USD"] },
      },
      required: ["id", "date", "category", "amount", "currency"],
      additionalProperties: false,
    },
  },
  budgetInput: {
    type: "object",
    properties: { level: { type: "string", enum: levelNames, description: "The job level." } },
    required: ["level"],
    additionalProperties: false,
  },
  budgetOutput: {
    type: "object",
    properties: {
      level: levelEnum,
      travel_limit: { type: "number", minimum: 0, multipleOf: 0.01, description: "The travel budget per member per quarter, in USD." },
    },
    required: ["level", "travel_limit"],
    additionalProperties: false,
  },
};

/** demoTools returns the demo tools as client tools; calls counts handler invocations by tool. */
export function demoTools(calls: Map<string, number> = new Map()): ClientTool[] {
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  return [
    {
      name: "get_team_members",
      description: "List the members of a department: [{id, name, level}], sorted by id. " +
        "Departments: engineering, sales, marketing, support.",
      inputSchema: schemas.teamMembersInput,
      outputSchema: schemas.teamMembersOutput,
      handler: ({ department }: { department: string }) => {
        count("get_team_members");
        if (!departmentNames.includes(department)) {
          throw new ToolError("invalid_arguments", `unknown department ${JSON.stringify(department)}: use one of ${departmentNames.join(", ")}`);
        }
        return roster.filter((m) => m[0] === department).sort((a, b) => (a[1] < b[1] ? -1 : 1))
          .map(([, id, name, level]) => ({ id, name, level: levelNames[level] }));
      },
    },
    {
      name: "get_expenses",
      description: "List a member's expense line items for a quarter of 2026: " +
        "[{id, date, category, amount, currency}], in date order. Amounts are in USD. " +
        "Fails with code not_found for an unknown member id.",
      inputSchema: schemas.expensesInput,
      outputSchema: schemas.expensesOutput,
      handler: ({ member_id, quarter }: { member_id: string; quarter: string }) => {
        count("get_expenses");
        const q = quarterNames.indexOf(quarter);
        if (q < 0) throw new ToolError("invalid_arguments", `unknown quarter ${JSON.stringify(quarter)}: use one of ${quarterNames.join(", ")}`);
        const m = roster.find((r) => r[1] === member_id);
        if (!m) throw new ToolError("not_found", `no team member has id ${JSON.stringify(member_id.slice(0, 64))}: use an id returned by get_team_members`);
        return generateExpenses(m[0], m[1], m[3], q);
      },
    },
    {
      name: "get_budget_by_level",
      description: "Get the budget of a job level: {level, travel_limit}, where travel_limit is " +
        "the travel budget per member per quarter in USD.",
      inputSchema: schemas.budgetInput,
      outputSchema: schemas.budgetOutput,
      handler: ({ level }: { level: string }) => {
        count("get_budget_by_level");
        const i = levelNames.indexOf(level);
        if (i < 0) throw new ToolError("invalid_arguments", `unknown level ${JSON.stringify(level)}: use one of ${levelNames.join(", ")}`);
        return { level, travel_limit: travelLimits[i] / 100 };
      },
    },
  ];
}
