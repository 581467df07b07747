// Durable executions and approvals from TypeScript: a script that pauses
// where only the caller can answer — a question to a human, a call that
// needs approval — and goes on later from its continuation, with no
// stream held open meanwhile; and approvals decided live in a run.
//
// Start a server with the demo tools, then run this file (see README.md):
//
//   go run ./cmd/ptcd --listen 127.0.0.1:7878 --demo-tools
//   node durable.mjs 127.0.0.1:7878

import { Answer, Client, ContinuationError, forModel, requiresAction, type PendingAction } from "@ptcrun/client";

const client = new Client(process.argv[2] ?? "127.0.0.1:7878");

const review = `
  const team = await tools.get_team_members({ department: "sales" });
  const pick = await tools.ask_reviewer({ question: "Whose travel should be reviewed?", options: team.map((m) => m.id) });
  const member = team.find((m) => m.id === pick.member_id);
  try {
    const budget = await tools.get_budget_by_level({ level: member.level });
    return { member: member.name, level: member.level, travel_limit: budget.travel_limit };
  } catch (err) {
    return { member: member.name, refused: err.code + ": " + err.message };
  }`;

// 1. A resumable execution. ask_reviewer is served by the caller, so a
//    call to it pauses the execution; so does get_budget_by_level, whose
//    calls the caller asked to approve. Each pause returns the pending
//    calls and a continuation: store it anywhere (a database row, a queue
//    message) and resume when the answer is known — from any process.
let res = await client.execute({
  source: review,
  resumable: true,
  tools: [{
    name: "ask_reviewer",
    description: "Ask the human reviewer a question; they pick one of the options.",
    inputSchema: { type: "object", properties: { question: { type: "string" }, options: { type: "array", items: { type: "string" } } } },
    outputSchema: { type: "object", properties: { member_id: { type: "string" } }, required: ["member_id"] },
  }],
  requireApproval: ["get_budget_by_level"],
});
const used: Array<{ continuation: string; answers: Answer[]; pending: PendingAction[] }> = [];
while (requiresAction(res)) {
  const answers = res.pendingActions.map((a: PendingAction) => {
    console.log(`paused: ${a.approval ? "approve" : "answer"} tools.${a.tool}(${a.argumentsJson.length > 40 ? "..." : a.argumentsJson})`);
    if (!a.approval) return Answer.output(a, { member_id: "sal-04" }); // what the human picked
    return a.tool === "get_budget_by_level" ? Answer.approve(a) : Answer.deny(a, "not approved");
  });
  used.push({ continuation: res.continuation, answers, pending: res.pendingActions });
  res = await client.resume(res.continuation, answers);
}
console.log("resumed:", forModel(res));

// 2. Retrying a resume is safe: the same continuation with the same
//    answers returns the same next state (nothing runs again), so a call
//    cut off loses nothing. With other answers it is refused — a
//    continuation resumes once — and the error says why (EXPIRED, USED,
//    TAMPERED, MALFORMED, ...).
const retried = await client.resume(used[0].continuation, used[0].answers);
console.log(`retried: the same next state: ${retried.continuation === used[1].continuation}`);
try {
  await client.resume(used[0].continuation, [Answer.output(used[0].pending[0], { member_id: "sal-01" })]);
} catch (err) {
  if (!(err instanceof ContinuationError)) throw err;
  console.log(`reused: ${err.kind} (${err.codeName})`);
}

// 3. Approvals while a run holds its stream: onApproval decides each call
//    that needs approval as it happens. A denial rejects the script's call
//    with a ToolError of code "denied" and the reason.
const levels = await client.run({
  source: `
    const out = {};
    for (const level of ["senior", "principal"]) {
      try {
        out[level] = (await tools.get_budget_by_level({ level })).travel_limit;
      } catch (err) {
        out[level] = err.code + ": " + err.message;
      }
    }
    return out;`,
  requireApproval: ["get_budget_by_level"],
  onApproval: async (action) => {
    const { level } = action.arguments as { level: string };
    return level === "principal" ? { approved: false, reason: "principal budgets are confidential" } : true;
  },
});
console.log("approvals:", forModel(levels));

client.close();
