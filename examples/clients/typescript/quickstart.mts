// A harness's view of ptc from TypeScript: run a script against the
// server's tools, serve a tool of your own, read live logs, handle a
// failed script and cancel a runaway one.
//
// Start a server with the demo tools, then run this file (see README.md):
//
//   go run ./cmd/ptcd --listen 127.0.0.1:7878 --demo-tools
//   node quickstart.mjs 127.0.0.1:7878

import { CancelledError, Client, ToolError, clientTool, forModel } from "@ptcrun/client";
import { z } from "zod";

const client = new Client(process.argv[2] ?? "127.0.0.1:7878");

// 1. A script against the server's tools: the model writes it, ptc runs it,
//    and only its small result comes back.
const overBudget = await client.execute({
  source: `
    const team = await tools.get_team_members({ department: input.department });
    const budgets = await Promise.all(["junior", "mid", "senior", "staff", "principal"]
      .map((level) => tools.get_budget_by_level({ level })));
    return { members: team.length, limits: budgets.map((b) => b.travel_limit) };`,
  input: { department: "sales" },
});
console.log("server tools:", forModel(overBudget));

// 2. A tool served by this process. The server validates the arguments
//    against the schema (a Zod schema here) before the handler runs; the
//    handler's result goes back into the running script.
const rates: Record<string, number> = { EUR: 0.92, GBP: 0.79 };
const convert = clientTool({
  name: "fx.convert",
  description: "Convert an amount of US dollars into another currency.",
  inputSchema: z.object({ usd: z.number().nonnegative(), currency: z.enum(["EUR", "GBP", "JPY"]) }),
  handler: ({ usd, currency }) => {
    const rate = rates[currency];
    if (rate === undefined) throw new ToolError("unsupported_currency", `no rate for ${currency}`);
    return { amount: Math.round(usd * rate * 100) / 100, currency };
  },
});
const converted = await client.run({
  source: `
    const budget = await tools.get_budget_by_level({ level: "senior" });
    console.log("senior travel budget", budget.travel_limit);
    const out = {};
    for (const currency of ["EUR", "GBP", "JPY"]) {
      try {
        out[currency] = (await tools.fx.convert({ usd: budget.travel_limit, currency })).amount;
      } catch (err) {
        out[currency] = err.code; // the handler's ToolError code
      }
    }
    return out;`,
  tools: [convert],
  onLog: (line) => console.log(`  [script ${line.level}] ${line.message}`),
});
console.log("client tool:", forModel(converted));

// 3. A script that fails is a result with a classified error, and a
//    short message to give back to the model.
const failed = await client.run({ source: "return await tools.get_expenses({ member_id: 'nobody', quarter: 'Q3' })" });
console.log("failed:", failed.error?.kind, "-", failed.modelMessage);

// 4. Cancellation: the signal stops the execution on the server.
try {
  await client.run({ source: "while (true) {}", signal: AbortSignal.timeout(200) });
} catch (err) {
  if (!(err instanceof CancelledError)) throw err;
  console.log("cancelled:", err.result?.error?.kind ?? "CANCELLED");
}

client.close();
