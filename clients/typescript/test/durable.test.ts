// Durable executions and approvals against real ptcd servers: a resumable
// execute that pauses at a client tool and at an approval, resume with
// answers, approvals decided over a Session, and every refused
// continuation as a ContinuationError of its kind.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import {
  Answer,
  Client,
  ContinuationError,
  InvalidRequestError,
  RequestError,
  forModel,
  requiresAction,
  unwrap,
  type PendingAction,
  type Result,
} from "@ptcrun/client";
import { ptcTool } from "@ptcrun/client/ai";
import { startPtcd, type Ptcd } from "./ptcd.js";

// A review that asks the caller whom to review (a client tool: pause 1)
// and reads the member's budget, a server tool this server's
// configuration requires approval for (pause 2). A denial is caught.
const reviewJS = `
const team = await tools.get_team_members({department: "sales"});
const pick = await tools.ask_reviewer({question: "Whose travel?", options: team.map((m) => m.id)});
const member = team.find((m) => m.id === pick.member_id);
try {
  const budget = await tools.get_budget_by_level({level: member.level});
  return {id: member.id, level: member.level, limit: budget.travel_limit};
} catch (e) {
  return {id: member.id, code: e.code, message: e.message};
}`;

const askReviewer = {
  name: "ask_reviewer",
  description: "Ask the human reviewer to pick a team member.",
  inputSchema: { type: "object", properties: { question: { type: "string" }, options: { type: "array" } }, required: ["question"] },
  outputSchema: { type: "object", properties: { member_id: { type: "string" } }, required: ["member_id"] },
};

// The approval-gated server tool alone, for Session runs.
const budgetJS = `
try {
  const b = await tools.get_budget_by_level({level: "senior"});
  return {ok: true, limit: b.travel_limit};
} catch (e) {
  return {ok: false, code: e.code, message: e.message};
}`;

let srv: Ptcd; // key "t1", approvals for get_budget_by_level
let short: Ptcd; // continuations live one second, its own key
let client: Client;
let shortClient: Client;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), "ptc-durable-ts-"));
  const cfg = join(dir, "ptcd.yaml");
  writeFileSync(cfg, [
    "durable:",
    "  keys:",
    "    - id: t1",
    "      secret_env: PTC_TEST_DURABLE_KEY",
    "approvals:",
    "  tools: [get_budget_by_level]",
    "",
  ].join("\n"));
  const env = { PTC_TEST_DURABLE_KEY: randomBytes(32).toString("hex") };
  [srv, short] = await Promise.all([
    startPtcd({ demoTools: true, args: ["--config", cfg], env }),
    startPtcd({ demoTools: true, args: ["--durable.ttl", "1s"] }),
  ]);
  client = new Client(srv.addr);
  shortClient = new Client(short.addr);
});
after(async () => {
  client?.close();
  shortClient?.close();
  await Promise.all([srv?.stop(), short?.stop()]);
});

/** pause1 starts the review and checks its first pause. */
async function pause1(c: Client = client, executionId = `rev-${randomBytes(4).toString("hex")}`): Promise<{ res: Result; ask: PendingAction }> {
  const res = await c.execute({ source: reviewJS, resumable: true, tools: [askReviewer], executionId });
  assert.equal(res.state, "REQUIRES_ACTION", res.error?.message);
  assert.equal(requiresAction(res), true);
  assert.equal(res.ok, false);
  assert.equal(res.error, undefined);
  assert.equal(res.pendingActions.length, 1);
  assert.ok(res.continuation.length > 0);
  assert.ok(res.continuationExpireTime instanceof Date && res.continuationExpireTime.getTime() > Date.now() - 5000);
  return { res, ask: res.pendingActions[0] };
}

/** expectRefused checks that p rejects with a ContinuationError of kind and code. */
async function expectRefused(p: Promise<unknown>, kind: string, code: number): Promise<ContinuationError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof ContinuationError, `want ContinuationError, got ${String(e)}`);
    assert.ok(e instanceof RequestError);
    assert.equal(e.kind, kind, e.message);
    assert.equal(e.code, code, e.message);
    assert.equal(e.reason, `CONTINUATION_${kind}`);
    return e;
  }
  assert.fail(`resume succeeded; want ContinuationError ${kind}`);
}

describe("resumable execute and resume", () => {
  test("a pending action carries the trace context of its execute_tool span from a server that traces", async () => {
    // Spans go to a collector that is not there: ptcd records them (and
    // drops them at export), which is all the trace context needs.
    const traced = await startPtcd({ demoTools: true, args: ["--tracing.endpoint", "127.0.0.1:1", "--tracing.insecure=true", "--tracing.sampling-ratio", "1"] });
    const c = new Client(traced.addr);
    try {
      const { res, ask } = await pause1(c);
      assert.match(ask.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      assert.equal(ask.tracestate, "");
      const done = await c.resume(res.continuation, [Answer.output(ask, { member_id: "sal-04" })]);
      assert.notEqual(done.state, "FAILED", done.error?.message);
    } finally {
      c.close();
      await traced.stop();
    }
  });

  test("pauses at a client tool and at an approval, and resumes with the answers", async () => {
    const { res, ask } = await pause1(client, "rev-1");
    assert.deepEqual({ ...ask, arguments: undefined }, {
      callId: ask.callId, kind: "CLIENT_TOOL", approval: false, seq: 2, tool: "ask_reviewer", arguments: undefined,
      argumentsJson: ask.argumentsJson, idempotencyKey: "rev-1/2", reason: "", traceparent: "", tracestate: "",
    });
    assert.equal((ask.arguments as { options: string[] }).options.length, 8);
    assert.equal(res.trace.length, 1); // get_team_members ran; the pending call is not in the trace
    assert.match(forModel(res), /paused.*tools\.ask_reviewer/);
    assert.throws(() => unwrap(res), /paused/);

    const second = await client.resume(res.continuation, [Answer.output(ask, { member_id: "sal-04" })]);
    assert.equal(second.state, "REQUIRES_ACTION");
    const [appr] = second.pendingActions;
    assert.equal(appr.kind, "APPROVAL");
    assert.equal(appr.approval, true);
    assert.equal(appr.tool, "get_budget_by_level");
    assert.deepEqual(appr.arguments, { level: "staff" });
    assert.equal(appr.idempotencyKey, `rev-1/${appr.seq}`);
    assert.ok(appr.reason.length > 0);
    assert.notEqual(second.continuation, res.continuation);

    const done = await client.resume(second.continuation, [Answer.approve(appr)]);
    assert.equal(done.state, "COMPLETED");
    assert.equal(done.ok, true, done.error?.message);
    assert.deepEqual(done.value, { id: "sal-04", level: "staff", limit: 4000 });
    assert.equal(done.pendingActions.length, 0);
    assert.equal(done.continuation, "");
    assert.equal(done.executionId, "rev-1");
  });

  test("a denial and a client tool error reach the script", async () => {
    const { res, ask } = await pause1();
    const second = await client.resume(res.continuation, [{ callId: ask.callId, output: { member_id: "sal-01" } }]);
    const done = await client.resume(second.continuation, [Answer.deny(second.pendingActions[0], "over budget this quarter")]);
    assert.deepEqual(done.value, { id: "sal-01", code: "denied", message: "over budget this quarter" });
    assert.equal(done.trace.at(-1)?.errorCode, "denied");

    const again = await pause1();
    const failed = await client.resume(again.res.continuation, [Answer.error(again.ask, "no_reviewer", "nobody is on duty")]);
    assert.equal(failed.ok, false);
    assert.equal(failed.error?.kind, "SCRIPT_ERROR");
    assert.match(failed.error?.message ?? "", /no_reviewer/);
  });

  test("a used continuation: retried with its answers it gives the same next state, with others it is refused", async () => {
    const { res, ask } = await pause1();
    const next = await client.resume(res.continuation, [Answer.output(ask, { member_id: "sal-02" })]);
    assert.equal(next.state, "REQUIRES_ACTION");
    const retried = await client.resume(res.continuation, [Answer.output(ask, { member_id: "sal-02" })]);
    assert.equal(retried.continuation, next.continuation);
    const e = await expectRefused(client.resume(res.continuation, [Answer.output(ask, { member_id: "sal-03" })]), "USED", status.FAILED_PRECONDITION);
    assert.match(e.details, /other answers/);
  });

  test("altered, malformed and foreign continuations are refused; the real one still works", async () => {
    const { res, ask } = await pause1();
    const tok = res.continuation;
    const i = Math.floor(tok.length / 2);
    const altered = tok.slice(0, i) + (tok[i] === "A" ? "B" : "A") + tok.slice(i + 1);
    const answers = [Answer.output(ask, { member_id: "sal-03" })];
    await expectRefused(client.resume(altered, answers), "TAMPERED", status.INVALID_ARGUMENT);
    await expectRefused(client.resume("not a continuation!", answers), "MALFORMED", status.INVALID_ARGUMENT);
    await expectRefused(client.resume(tok.slice(0, 20), answers), "MALFORMED", status.INVALID_ARGUMENT);
    await expectRefused(shortClient.resume(tok, answers), "UNKNOWN_KEY", status.INVALID_ARGUMENT);
    const next = await client.resume(tok, answers);
    assert.equal(next.pendingActions[0]?.tool, "get_budget_by_level");
  });

  test("an expired continuation is refused", async () => {
    const { res, ask } = await pause1(shortClient);
    // The server issued it for one second; wait until its stated expiry
    // has passed on this clock (and a second more for clock granularity).
    const wait = res.continuationExpireTime!.getTime() - Date.now() + 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, wait)));
    await expectRefused(shortClient.resume(res.continuation, [Answer.output(ask, { member_id: "sal-01" })]), "EXPIRED", status.FAILED_PRECONDITION);
  });

  test("answers that do not fit are refused by the server, naming the call; the continuation stays usable", async () => {
    const { res, ask } = await pause1();
    const cases: Array<{ name: string; answers: Answer[]; match: RegExp }> = [
      { name: "unknown call id", answers: [Answer.output("c99", {})], match: /c99/ },
      { name: "missing answer", answers: [], match: new RegExp(ask.callId) },
      { name: "output fails the output schema", answers: [Answer.output(ask, { who: 1 })], match: /output schema/ },
      { name: "approval of a client tool call", answers: [Answer.approve(ask)], match: /not an approval/ },
    ];
    for (const c of cases) {
      await assert.rejects(client.resume(res.continuation, c.answers), (e: unknown) => {
        assert.ok(e instanceof RequestError && !(e instanceof ContinuationError), `${c.name}: ${String(e)}`);
        assert.equal(e.code, status.INVALID_ARGUMENT, c.name);
        assert.equal(e.reason, "ANSWERS_INVALID", c.name);
        assert.match(e.details, c.match, c.name);
        return true;
      });
    }
    const next = await client.resume(res.continuation, [Answer.output(ask, { member_id: "sal-05" })]);
    assert.equal(next.state, "REQUIRES_ACTION");
  });

  test("requests and answers the client refuses before sending", async () => {
    const bad: Array<{ name: string; call: () => Promise<unknown>; path: string }> = [
      { name: "empty continuation", call: () => client.resume("", []), path: "continuation" },
      { name: "answer without call id", call: () => client.resume("x", [{ output: 1 } as unknown as Answer]), path: "answers[0].callId" },
      { name: "answered twice", call: () => client.resume("x", [Answer.approve("c1"), Answer.approve("c1")]), path: "answers[1].callId" },
      { name: "two outcomes", call: () => client.resume("x", [{ callId: "c1", output: 1, approve: true }]), path: "answers[0]" },
      { name: "no outcome", call: () => client.resume("x", [{ callId: "c1" }]), path: "answers[0]" },
      { name: "approve false alone", call: () => client.resume("x", [{ callId: "c1", approve: false }]), path: "answers[0]" },
      { name: "approve and deny", call: () => client.resume("x", [{ callId: "c1", approve: true, deny: true }]), path: "answers[0]" },
      { name: "approve the string true", call: () => client.resume("x", [{ callId: "c1", approve: "true" } as unknown as Answer]), path: "answers[0].approve" },
      { name: "approve the number 1", call: () => client.resume("x", [{ callId: "c1", approve: 1 } as unknown as Answer]), path: "answers[0].approve" },
      { name: "deny the string false", call: () => client.resume("x", [{ callId: "c1", deny: "false" } as unknown as Answer]), path: "answers[0].deny" },
      { name: "an unknown field", call: () => client.resume("x", [{ callId: "c1", approved: true } as unknown as Answer]), path: "answers[0].approved" },
      { name: "approve with an unknown field", call: () => client.resume("x", [{ ...Answer.approve("c1"), scope: "all" } as unknown as Answer]), path: "answers[0].scope" },
      { name: "output not JSON", call: () => client.resume("x", [Answer.output("c1", { n: 1n })]), path: "answers[0].output/n" },
      { name: "error without code", call: () => client.resume("x", [Answer.error("c1", "")]), path: "answers[0].error.code" },
      { name: "reason too long", call: () => client.resume("x", [Answer.deny("c1", "x".repeat(5000))]), path: "answers[0].reason" },
      { name: "client tools without resumable", call: () => client.execute({ source: "return 1", tools: [askReviewer] }), path: "tools" },
      { name: "resumable run", call: () => client.run({ source: "return 1", resumable: true } as never), path: "resumable" },
      { name: "onApproval in execute", call: () => client.execute({ source: "return 1", onApproval: () => true } as never), path: "onApproval" },
      { name: "bad requireApproval", call: () => client.execute({ source: "return 1", requireApproval: ["no such"] }), path: "requireApproval[0]" },
    ];
    for (const b of bad) {
      await assert.rejects(b.call(), (e: unknown) => {
        assert.ok(e instanceof InvalidRequestError, `${b.name}: ${String(e)}`);
        assert.equal(e.path, b.path, b.name);
        return true;
      });
    }
  });

  test("limits of pauses round-trip, and requireApproval pauses at a tool the server does not gate", async () => {
    const res = await client.execute({
      source: "return await tools.get_expenses({member_id: 'sal-01', quarter: 'Q2'}).then((x) => x.length)",
      resumable: true,
      requireApproval: ["get_expenses"],
      limits: { maxPauses: 3, maxPausedTimeMs: 60_000 },
    });
    assert.equal(res.pendingActions[0]?.tool, "get_expenses");
    assert.equal(res.effectiveLimits.maxPauses, 3);
    assert.equal(res.effectiveLimits.maxPausedTimeMs, 60_000);
    const done = await client.resume(res.continuation, [Answer.approve(res.pendingActions[0])]);
    assert.equal(typeof done.value, "number");
  });
});

describe("approvals in run (a Session)", () => {
  test("listTools tells in advance which tools the server's configuration gates", async () => {
    const l = await client.listTools({ includeTypescript: true });
    const gated = l.tools.filter((t) => t.requiresApproval).map((t) => t.name);
    assert.deepEqual(gated, ["get_budget_by_level"]);
    assert.match(l.typescript, /Each call waits for approval/);
  });

  test("onApproval approves, denies with a reason, or is absent", async () => {
    const seen: PendingAction[] = [];
    const approved = await client.run({
      source: budgetJS,
      executionId: "appr-1",
      onApproval: async (a, ctx) => {
        seen.push(a);
        assert.ok(ctx.signal instanceof AbortSignal);
        return true;
      },
    });
    assert.deepEqual(approved.value, { ok: true, limit: 3000 });
    assert.equal(seen.length, 1);
    assert.equal(seen[0].tool, "get_budget_by_level");
    assert.equal(seen[0].approval, true);
    assert.deepEqual(seen[0].arguments, { level: "senior" });
    assert.equal(seen[0].idempotencyKey, `appr-1/${seen[0].seq}`);

    const denied = await client.run({ source: budgetJS, onApproval: () => ({ approved: false, reason: "not during the audit" }) });
    assert.deepEqual(denied.value, { ok: false, code: "denied", message: "not during the audit" });

    const none = await client.run({ source: budgetJS });
    assert.deepEqual(none.value, { ok: false, code: "denied", message: "this client has no approval callback (onApproval)" });
  });

  test("a callback that throws or answers nonsense denies; long reasons are cut", async () => {
    const threw = await client.run({ source: budgetJS, onApproval: () => { throw new Error("policy service down"); } });
    assert.deepEqual(threw.value, { ok: false, code: "denied", message: "the approval callback failed: policy service down" });
    const odd = await client.run({ source: budgetJS, onApproval: () => "yes" as never });
    assert.equal((odd.value as { code: string }).code, "denied");
    const long = await client.run({ source: budgetJS, onApproval: () => ({ approved: false, reason: "é".repeat(3000) }) });
    const msg = (long.value as { message: string }).message;
    assert.ok(Buffer.byteLength(msg) <= 4096 && msg.endsWith("…"), String(Buffer.byteLength(msg)));
  });

  test("only true or {approved: true} approves: every other decision denies", async () => {
    const odd: Array<{ name: string; d: unknown }> = [
      { name: "the string yes", d: "yes" },
      { name: "the string true", d: "true" },
      { name: "the number 1", d: 1 },
      { name: "null", d: null },
      { name: "undefined", d: undefined },
      { name: "an empty object", d: {} },
      { name: "an array", d: [true] },
      { name: "approved the string true", d: { approved: "true" } },
      { name: "approved 1", d: { approved: 1 } },
      { name: "approved true with an unknown field", d: { approved: true, scope: "read-only" } },
      { name: "approve (misspelt) true", d: { approve: true } },
      { name: "approved true with a reason that is not a string", d: { approved: true, reason: 5 } },
    ];
    for (const o of odd) {
      const res = await client.run({ source: budgetJS, onApproval: () => o.d as never });
      assert.deepEqual(res.value, { ok: false, code: "denied", message: "the approval callback returned neither a boolean nor {approved, reason}" }, o.name);
    }
    const promised = await client.run({ source: budgetJS, onApproval: async () => ({ approved: true, reason: "fine" }) });
    assert.deepEqual(promised.value, { ok: true, limit: 3000 });
  });

  test("calls started together are each decided once, beside client tools", async () => {
    const decisions: string[] = [];
    const res = await client.run({
      source: `
        const levels = ["junior", "senior", "staff"];
        const out = await Promise.allSettled(levels.map((level) => tools.get_budget_by_level({level})));
        const note = await tools.note({n: out.length});
        return {out: out.map((o) => o.status === "fulfilled" ? o.value.travel_limit : o.reason.code), note};`,
      tools: [{ name: "note", handler: (a: unknown) => a }],
      onApproval: async (a) => {
        const level = (a.arguments as { level: string }).level;
        decisions.push(level);
        return level !== "staff" || { approved: false, reason: "no" };
      },
    });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(res.value, { out: [1500, 3000, "denied"], note: { n: 3 } });
    assert.deepEqual(decisions.sort(), ["junior", "senior", "staff"]);
  });

  test("the code-mode adapters pass onApproval to the run", async () => {
    const t = await ptcTool({ client, onApproval: () => ({ approved: false, reason: "ask a human" }) });
    const out = await t.execute!({ code: budgetJS }, { toolCallId: "c1", messages: [], context: {} });
    assert.deepEqual(out, { ok: true, result: { ok: false, code: "denied", message: "ask a human" } });
    // ListTools reports the effective requirement: the server's
    // approvals.tools configuration gates this tool.
    const list = await client.listTools({ names: ["get_budget_by_level"] });
    assert.equal(list.tools[0].requiresApproval, true);
  });
});
