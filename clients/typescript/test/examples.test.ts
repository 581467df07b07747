// The runnable examples in examples/clients/typescript, compiled by
// tsconfig.examples.json and run against a ptcd with the demo tools.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { startPtcd, type Ptcd } from "./ptcd.js";

const built = join(dirname(fileURLToPath(import.meta.url)), "../examples");

let srv: Ptcd;
before(async () => {
  srv = await startPtcd({ demoTools: true });
});
after(async () => {
  await srv?.stop();
});

test("quickstart", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(built, "quickstart.mjs"), srv.addr], { timeout: 60_000 });
  const lines = stdout.trimEnd().split("\n");
  // Live console lines are best effort; everything else is exact.
  assert.deepEqual(lines.filter((l) => !l.startsWith("  [script ")), [
    'server tools: {"members":8,"limits":[1500,2000,3000,4000,5000]}',
    'client tool: {"EUR":2760,"GBP":2370,"JPY":"unsupported_currency"}',
    `failed: SCRIPT_ERROR - The script failed with SCRIPT_ERROR at line 1, column 32: uncaught ToolError from tool get_expenses (code not_found): no team member has id "nobody": use an id returned by get_team_members. Check the arguments and the error of tool get_expenses; catch tool errors with try/catch (err.code, err.message) if the script can continue without it.`,
    "cancelled: CANCELLED",
  ]);
  for (const l of lines.filter((l) => l.startsWith("  [script "))) assert.equal(l, "  [script log] senior travel budget 3000");
});

test("durable", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(built, "durable.mjs"), srv.addr], { timeout: 60_000 });
  assert.deepEqual(stdout.trimEnd().split("\n"), [
    "paused: answer tools.ask_reviewer(...)",
    'paused: approve tools.get_budget_by_level({"level":"staff"})',
    'resumed: {"member":"Xavier Dubois","level":"staff","travel_limit":4000}',
    "retried: the same next state: true",
    "reused: USED (FAILED_PRECONDITION)",
    'approvals: {"senior":3000,"principal":"denied: principal budgets are confidential"}',
  ]);
});
