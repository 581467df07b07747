// Execute and ListTools against a real ptcd with the demo tools.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { CancelledError, Client, ExecutionError, RequestError, forModel, unwrap } from "@ptcrun/client";
import { ptcdBinary, repoRoot, startPtcd, type Ptcd } from "./ptcd.js";

const expensesJS = readFileSync(join(repoRoot, "examples/expenses.js"), "utf8");
const expensesTS = readFileSync(join(repoRoot, "examples/expenses.ts"), "utf8");
const expected = JSON.parse(readFileSync(join(repoRoot, "examples/expenses.expected.json"), "utf8"));

let srv: Ptcd;
let client: Client;
before(async () => {
  srv = await startPtcd({ demoTools: true });
  client = new Client(srv.addr);
});
after(async () => {
  client?.close();
  await srv?.stop();
});

describe("execute with the server's tools", () => {
  test("the expense example gives the expected result", async () => {
    const res = await client.execute({ source: expensesJS });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(res.value, expected);
    assert.equal(res.stats.toolCalls, 26);
    assert.equal(res.trace.length, 26);
    assert.ok(res.stats.toolResultBytes > 200_000);
    assert.match(res.logs[0].message, /5 of 20 members over their travel budget/);
    assert.equal(forModel(res), res.resultJson);
  });

  test("the TypeScript version gives the same result", async () => {
    const res = await client.execute({ source: expensesTS, language: "typescript" });
    assert.deepEqual(unwrap(res), expected);
  });

  test("input, execution id and effective limits round-trip", async () => {
    const res = await client.execute({
      source: "return {input, n: input.n * 2}",
      input: { n: 21 },
      executionId: "exec-1",
      limits: { timeoutMs: 5000, maxToolCalls: 7 },
    });
    assert.deepEqual(res.value, { input: { n: 21 }, n: 42 });
    assert.equal(res.executionId, "exec-1");
    assert.equal(res.effectiveLimits.timeoutMs, 5000);
    assert.equal(res.effectiveLimits.maxToolCalls, 7);
  });

  test("maxLogEntries caps the captured console entries", async () => {
    const res = await client.execute({
      source: "for (let i = 0; i < 10; i++) console.log('line ' + i); return 'done'",
      limits: { maxLogEntries: 3 },
    });
    assert.equal(res.ok, true, res.error?.message);
    assert.equal(res.effectiveLimits.maxLogEntries, 3);
    assert.deepEqual(res.logs.map((l) => l.message), ["line 0", "line 1", "line 2"]);
    assert.equal(res.logsTruncated, true);
  });

  test("maxResultTokens fails an oversize result by default", async () => {
    const res = await client.execute({ source: "return Array.from({length: 500}, (_, i) => 'item number ' + i)", limits: { maxResultTokens: 100 } });
    assert.equal(res.error?.kind, "OUTPUT_LIMIT");
    assert.equal(res.effectiveLimits.maxResultTokens, 100);
    assert.equal(res.stats.resultTruncated, false);
  });

  const truncations: Array<{ name: string; limits: object }> = [
    { name: "maxOutputBytes", limits: { maxOutputBytes: 2000 } },
    { name: "maxResultTokens", limits: { maxResultTokens: 300 } },
  ];
  for (const t of truncations) {
    test(`overflow "truncate" cuts an oversize result to fit ${t.name}, and says so`, async () => {
      const res = await client.execute({
        source: "return {rows: Array.from({length: 500}, (_, i) => ({id: i, name: 'row ' + i})), note: 'n'.repeat(5000)}",
        limits: t.limits,
        overflow: "truncate",
      });
      assert.equal(res.ok, true, res.error?.message);
      const v = res.value as { rows: unknown[]; note: string };
      assert.ok(v.rows.length < 500, `${v.rows.length} rows kept`);
      assert.match(String(v.rows[v.rows.length - 1]), /^\[truncated: \d+ more items\]$/);
      assert.equal(res.stats.resultTruncated, true);
      assert.ok(res.stats.untruncatedOutputBytes > res.stats.outputBytes, `${res.stats.untruncatedOutputBytes} > ${res.stats.outputBytes}`);
      assert.equal(res.stats.outputBytes, Buffer.byteLength(res.resultJson));
      assert.ok(res.stats.droppedItems > 0);
      assert.ok(res.stats.cutStrings > 0);
      // The model is told how the result was cut.
      assert.ok(forModel(res).startsWith(res.resultJson));
      assert.match(forModel(res), /truncated from \d+ to \d+ bytes/);
    });
  }

  test("overflow \"truncate\" still fails a result that cannot fit", async () => {
    const res = await client.execute({ source: "return 'x'.repeat(5000)", limits: { maxOutputBytes: 10 }, overflow: "truncate" });
    assert.equal(res.error?.kind, "OUTPUT_LIMIT");
  });

  const failures: Array<{ name: string; source: string; kind: string; extra?: object }> = [
    { name: "syntax error", source: "return (", kind: "SYNTAX_ERROR" },
    { name: "uncaught exception", source: "throw new Error('boom')", kind: "SCRIPT_ERROR" },
    { name: "uncaught tool error", source: "return await tools.get_expenses({member_id: 'nobody', quarter: 'Q1'})", kind: "SCRIPT_ERROR" },
    { name: "timeout", source: "while (true) {}", kind: "TIMEOUT", extra: { limits: { timeoutMs: 300 } } },
    { name: "tool call limit", source: "for (let i = 0; i < 3; i++) await tools.get_budget_by_level({level: 'mid'})", kind: "TOOL_CALL_LIMIT", extra: { limits: { maxToolCalls: 2 } } },
    { name: "output limit", source: "return 'x'.repeat(5000)", kind: "OUTPUT_LIMIT", extra: { limits: { maxOutputBytes: 1000 } } },
    { name: "result schema", source: "return 'text'", kind: "RESULT_SCHEMA_VIOLATION", extra: { resultSchema: { type: "number" } } },
  ];
  for (const f of failures) {
    test(`a script failure is a result: ${f.name} → ${f.kind}`, async () => {
      const res = await client.execute({ source: f.source, ...f.extra });
      assert.equal(res.ok, false);
      assert.ok(res.error instanceof ExecutionError);
      assert.equal(res.error.kind, f.kind);
      assert.equal(res.value, undefined);
      assert.ok(res.modelMessage.length > 0);
      assert.equal(forModel(res), res.modelMessage);
      assert.throws(() => unwrap(res), (e: unknown) => e instanceof ExecutionError && e.kind === f.kind);
    });
  }

  test("a result larger than gRPC's default 4 MB message arrives", async () => {
    const res = await client.run({ source: "return 'x'.repeat(5 * 1024 * 1024)", limits: { maxOutputBytes: 8 << 20 } });
    assert.equal(res.ok, true, res.error?.message);
    assert.equal((res.value as string).length, 5 * 1024 * 1024);
  });

  test("a syntax error carries its line", async () => {
    const res = await client.execute({ source: "const a = 1;\nconst = 2;\nreturn a" });
    assert.equal(res.error?.kind, "SYNTAX_ERROR");
    assert.equal(res.error?.line, 2);
  });

  const refused: Array<{ name: string; req: object; code: number }> = [
    { name: "unknown allowed tool", req: { source: "return 1", allowedTools: ["no_such_tool"] }, code: status.INVALID_ARGUMENT },
    { name: "result schema the server cannot compile", req: { source: "return 1", resultSchema: { $ref: "#/$defs/missing" } }, code: status.INVALID_ARGUMENT },
    { name: "unknown module digest", req: { language: "wasm", moduleSha256: "0".repeat(64) }, code: status.FAILED_PRECONDITION },
  ];
  for (const r of refused) {
    test(`a request problem is a RequestError: ${r.name}`, async () => {
      await assert.rejects(client.execute(r.req), (e: unknown) => {
        assert.ok(e instanceof RequestError, String(e));
        assert.equal(e.code, r.code, e.message);
        return true;
      });
    });
  }

  test("an AbortSignal cancels the call", async () => {
    const ac = new AbortController();
    const p = client.execute({ source: "while (true) {}", signal: ac.signal, limits: { timeoutMs: 20_000 } });
    setImmediate(() => ac.abort(new Error("user pressed stop")));
    await assert.rejects(p, (e: unknown) => e instanceof CancelledError && (e.reason as Error).message === "user pressed stop");
  });

  test("an unreachable server is UNAVAILABLE", async () => {
    const dead = new Client("127.0.0.1:1");
    try {
      await assert.rejects(dead.execute({ source: "return 1" }), (e: unknown) => e instanceof RequestError && e.code === status.UNAVAILABLE);
    } finally {
      dead.close();
    }
  });
});

describe("listTools", () => {
  test("describes the tools with TypeScript and a prompt", async () => {
    const list = await client.listTools({ includeTypescript: true });
    assert.deepEqual(list.tools.map((t) => t.name), ["get_budget_by_level", "get_expenses", "get_team_members"]);
    assert.equal((list.tools[0].inputSchema as { type: string }).type, "object");
    assert.match(list.typescript, /declare const tools/);
    assert.match(list.prompt, /body of an async function/);
    assert.ok(list.approxTokens > 0);
  });

  test("ranks by a query", async () => {
    const list = await client.listTools({ query: "travel budget of a level", limit: 1 });
    assert.equal(list.tools.length, 1);
    assert.equal(list.tools[0].name, "get_budget_by_level");
    assert.equal(list.matches.length, 1);
  });

  test("an unknown name is INVALID_ARGUMENT", async () => {
    await assert.rejects(client.listTools({ names: ["nope"] }), (e: unknown) => e instanceof RequestError && e.codeName === "INVALID_ARGUMENT");
  });
});

describe("authentication", () => {
  test("the token goes out as a bearer token; without it the server says UNAUTHENTICATED", async () => {
    const token = "a-long-random-test-token-0123456789";
    const hash = execFileSync(ptcdBinary(), ["hash-token"], { input: token + "\n" }).toString().trim();
    const dir = mkdtempSync(join(tmpdir(), "ptc-auth-"));
    const config = join(dir, "ptcd.yaml");
    writeFileSync(config, `auth:\n  enabled: true\ntenants:\n  - name: harness\n    token_hashes: ["${hash}"]\n`);
    const authed = await startPtcd({ args: ["--config", config] });
    const good = new Client(authed.addr, { token });
    const bad = new Client(authed.addr, { token: "wrong-token-wrong-token-wrong" });
    const none = new Client(authed.addr);
    try {
      assert.equal((await good.run({ source: "return await tools.t({})", tools: [{ name: "t", handler: () => "ok" }] })).value, "ok");
      for (const c of [bad, none]) {
        await assert.rejects(c.execute({ source: "return 1" }), (e: unknown) => e instanceof RequestError && e.code === status.UNAUTHENTICATED);
      }
    } finally {
      for (const c of [good, bad, none]) c.close();
      await authed.stop();
    }
  });
});
