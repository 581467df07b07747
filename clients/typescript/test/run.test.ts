// run: client tools served over a Session stream, against real ptcd
// servers (one with the demo tools, one without).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { z } from "zod";
import {
  CancelledError,
  Client,
  ClientClosedError,
  ConnectionLostError,
  RequestError,
  ToolError,
  clientTool,
  type LogEntry,
  type ProgressEvent,
  type ToolCallContext,
} from "@ptcrun/client";
import { demoTools } from "./demo.js";
import { repoRoot, startPtcd, type Ptcd } from "./ptcd.js";

const expensesJS = readFileSync(join(repoRoot, "examples/expenses.js"), "utf8");
const expected = JSON.parse(readFileSync(join(repoRoot, "examples/expenses.expected.json"), "utf8"));

let demoSrv: Ptcd; // serves the demo tools
let plainSrv: Ptcd; // serves no tools: the client serves them
let demo: Client;
let plain: Client;
before(async () => {
  [demoSrv, plainSrv] = await Promise.all([startPtcd({ demoTools: true }), startPtcd()]);
  demo = new Client(demoSrv.addr);
  plain = new Client(plainSrv.addr);
});
after(async () => {
  demo?.close();
  plain?.close();
  await Promise.all([demoSrv?.stop(), plainSrv?.stop()]);
});

/** deferred returns a promise and the function that resolves it. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("the expense example", () => {
  test("gives the expected result with the demo tools served by the client", async () => {
    const calls = new Map<string, number>();
    const res = await plain.run({ source: expensesJS, tools: demoTools(calls) });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(res.value, expected);
    assert.deepEqual(Object.fromEntries(calls), { get_team_members: 1, get_expenses: 20, get_budget_by_level: 5 });
    assert.ok(res.trace.every((r) => r.ok));
  });

  test("gives the expected result with the demo tools served by the server, over a session", async () => {
    const res = await demo.run({ source: expensesJS });
    assert.deepEqual(res.value, expected);
  });

  test("the client's demo tools are defined exactly as the server's", async () => {
    const server = await demo.listTools();
    const byName = new Map(server.tools.map((t) => [t.name, t]));
    for (const t of demoTools()) {
      const s = byName.get(t.name);
      assert.ok(s, t.name);
      assert.equal(t.description, s.description);
      assert.deepEqual(t.inputSchema, s.inputSchema);
      assert.deepEqual(t.outputSchema, s.outputSchema);
    }
  });
});

describe("client tools", () => {
  test("server and client tools in one script", async () => {
    const res = await demo.run({
      source: "const b = await tools.get_budget_by_level({level: 'mid'}); return await tools.fx.to_eur({usd: b.travel_limit})",
      tools: [{ name: "fx.to_eur", handler: ({ usd }: { usd: number }) => ({ eur: usd * 0.5 }) }],
    });
    assert.deepEqual(res.value, { eur: 1000 });
  });

  test("noServerTools leaves the script its client tools and no server tool, whatever allowedTools says", async () => {
    const source = "let server; try { await tools.get_budget_by_level({level: 'mid'}); server = 'called' } catch (e) { server = e.message } return { server, mine: await tools.fx.to_eur({usd: 2}) }";
    const tools = [{ name: "fx.to_eur", handler: ({ usd }: { usd: number }) => ({ eur: usd * 0.5 }) }];
    const withServer = await demo.run({ source, tools });
    assert.deepEqual(withServer.value, { server: "called", mine: { eur: 1 } });
    for (const extra of [{}, { allowedTools: ["get_budget_by_level"] }]) {
      const res = await demo.run({ source, tools, noServerTools: true, ...extra });
      const v = res.value as { server: string; mine: unknown };
      assert.match(v.server, /unknown tool "get_budget_by_level"/);
      assert.deepEqual(v.mine, { eur: 1 });
    }
  });

  test("handlers run concurrently and answer out of order", async () => {
    const released = deferred();
    const res = await plain.run({
      source: `const order = [];
        const first = tools.first({}).then((v) => order.push(v));
        order.push(await tools.second({}));
        await tools.release({});
        await first;
        return order;`,
      limits: { timeoutMs: 20_000 },
      tools: [
        // Call 1 stays in flight while calls 2 and 3 are served and
        // answered; it answers last. Served one at a time, this deadlocks.
        { name: "first", handler: async () => { await released.promise; return "first"; } },
        { name: "second", handler: () => "second" },
        { name: "release", handler: () => { released.resolve(); return null; } },
      ],
    });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(res.value, ["second", "first"]);
    assert.deepEqual(res.trace.map((r) => r.tool), ["first", "second", "release"]);
  });

  test("many calls are in flight at once", async () => {
    const n = 12;
    let started = 0;
    const all = deferred();
    const res = await plain.run({
      source: `return await Promise.all(Array.from({length: ${n}}, (_, i) => tools.barrier({i})))`,
      limits: { timeoutMs: 20_000, maxConcurrentToolCalls: n },
      tools: [{
        name: "barrier",
        // Every handler waits until all of them have started.
        handler: async ({ i }: { i: number }) => {
          if (++started === n) all.resolve();
          await all.promise;
          return i;
        },
      }],
    });
    assert.deepEqual(res.value, Array.from({ length: n }, (_, i) => i));
  });

  test("a call's context carries its idempotency key, deadline and signal", async () => {
    let seen: ToolCallContext | undefined;
    const res = await plain.run({
      source: "return await tools.ctx({})",
      executionId: "ctx-test",
      limits: { timeoutMs: 10_000 },
      tools: [{ name: "ctx", handler: (_: unknown, ctx: ToolCallContext) => { seen = ctx; return ctx.signal.aborted; } }],
    });
    assert.equal(res.value, false);
    assert.equal(seen?.idempotencyKey, "ctx-test/1");
    assert.equal(seen?.tool, "ctx");
    assert.ok(seen?.deadline && seen.deadline.getTime() > Date.now() - 60_000);
    assert.equal(seen?.signal.aborted, true, "the signal aborts when the execution ends");
  });

  test("a call's context carries no trace context from a server that does not trace", async () => {
    let seen: ToolCallContext | undefined;
    await plain.run({ source: "return await tools.ctx({})", tools: [{ name: "ctx", handler: (_: unknown, ctx: ToolCallContext) => { seen = ctx; return null; } }] });
    assert.equal(seen?.traceparent, "");
    assert.equal(seen?.tracestate, "");
  });

  test("a call's context carries the trace context of its execute_tool span from a server that traces", async () => {
    // Spans go to a collector that is not there: ptcd records them (and
    // drops them at export), which is all the call's trace context needs.
    const traced = await startPtcd({ args: ["--tracing.endpoint", "127.0.0.1:1", "--tracing.insecure=true", "--tracing.sampling-ratio", "1"] });
    const c = new Client(traced.addr);
    try {
      const seen: ToolCallContext[] = [];
      const res = await c.run({
        source: "return [await tools.ctx({}), await tools.ctx({})]",
        tools: [{ name: "ctx", handler: (_: unknown, ctx: ToolCallContext) => { seen.push(ctx); return ctx.traceparent; } }],
      });
      assert.equal(seen.length, 2);
      const [a, b] = seen.map((s) => /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(s.traceparent));
      assert.ok(a && b, `traceparents ${seen.map((s) => s.traceparent).join(", ")}`);
      assert.equal(a[1], b[1], "both calls are in the execution's trace");
      assert.notEqual(a[2], b[2], "each call has its own span");
      assert.equal(seen[0].tracestate, "");
      assert.deepEqual(res.value, seen.map((s) => s.traceparent));
    } finally {
      c.close();
      await traced.stop();
    }
  });

  const failing: Array<{ name: string; handler: () => unknown; code: string; message: RegExp }> = [
    { name: "ToolError keeps its code", handler: () => { throw new ToolError("not_found", "no such city"); }, code: "not_found", message: /no such city/ },
    { name: "an Error is tool_failed", handler: async () => { throw new TypeError("cannot read x"); }, code: "tool_failed", message: /cannot read x/ },
    { name: "a thrown non-Error is tool_panic", handler: () => { throw "oops"; }, code: "tool_panic", message: /oops/ },
    { name: "a BigInt result is invalid_output", handler: () => ({ n: 1n }), code: "invalid_output", message: /BigInt/ },
    { name: "a cyclic result is invalid_output", handler: () => { const o: Record<string, unknown> = {}; o.o = o; return o; }, code: "invalid_output", message: /cyclic/ },
    { name: "a NaN result is invalid_output", handler: () => NaN, code: "invalid_output", message: /NaN/ },
  ];
  for (const f of failing) {
    test(`a failing handler fails the call: ${f.name}`, async () => {
      const res = await plain.run({
        source: "try { await tools.t({}); return 'no error'; } catch (e) { return {name: e.name, code: e.code, message: e.message, tool: e.tool}; }",
        tools: [{ name: "t", handler: f.handler }],
      });
      const v = res.value as { name: string; code: string; message: string; tool: string };
      assert.equal(v.name, "ToolError");
      assert.equal(v.code, f.code);
      assert.match(v.message, f.message);
      assert.equal(v.tool, "t");
      assert.equal(res.trace[0].errorCode, f.code);
    });
  }

  test("an uncaught tool error fails the script with SCRIPT_ERROR naming the tool", async () => {
    const res = await plain.run({
      source: "return await tools.t({})",
      tools: [{ name: "t", handler: () => { throw new Error("down"); } }],
    });
    assert.equal(res.error?.kind, "SCRIPT_ERROR");
    assert.equal(res.error?.tool, "t");
  });

  test("arguments that violate the input schema never reach the handler", async () => {
    let calls = 0;
    const res = await plain.run({
      source: `try { await tools.square({n: "seven"}); return "called"; }
        catch (e) { return {name: e.name, code: e.code, errors: e.errors.map((x) => x.path)}; }`,
      tools: [{
        name: "square",
        inputSchema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
        handler: ({ n }: { n: number }) => { calls++; return n * n; },
      }],
    });
    assert.deepEqual(res.value, { name: "ToolArgumentError", code: "invalid_arguments", errors: ["/n"] });
    assert.equal(calls, 0);
    assert.equal(res.trace[0].errorCode, "invalid_arguments");
  });

  test("a result that violates the output schema is invalid_output", async () => {
    const res = await plain.run({
      source: "try { return await tools.t({}); } catch (e) { return e.code; }",
      tools: [{ name: "t", outputSchema: { type: "object", required: ["id"] }, handler: () => ({ name: "x" }) }],
    });
    assert.equal(res.value, "invalid_output");
  });

  test("a Zod schema is converted with Zod's JSON Schema export and parses the arguments", async () => {
    const seen: unknown[] = [];
    const weather = clientTool({
      name: "weather",
      description: "The weather in a city.",
      inputSchema: z.object({ city: z.string().min(1), units: z.enum(["c", "f"]).default("c") }),
      outputSchema: z.object({ temp: z.number() }),
      handler: (args) => {
        seen.push(args); // args: {city: string, units: "c" | "f"}
        return { temp: args.units === "c" ? 21 : 70 };
      },
    });
    const res = await plain.run({
      source: `const ok = await tools.weather({city: "Oslo"});
        let bad; try { await tools.weather({city: ""}); } catch (e) { bad = e.name + ":" + e.code; }
        return {ok, bad};`,
      tools: [weather],
    });
    assert.deepEqual(res.value, { ok: { temp: 21 }, bad: "ToolArgumentError:invalid_arguments" });
    assert.deepEqual(seen, [{ city: "Oslo", units: "c" }]);
  });

  test("logs stream to onLog while the script runs", async () => {
    const logs: LogEntry[] = [];
    const sawTwo = deferred();
    const res = await plain.run({
      source: "console.log('one'); console.warn('two'); await tools.t({}); console.error('three'); return 1",
      // The tool answers only once 'two' has arrived: the lines stream
      // while the script waits, not with the result.
      tools: [{ name: "t", handler: async () => { await sawTwo.promise; return null; } }],
      limits: { timeoutMs: 20_000 },
      onLog: (l) => {
        logs.push(l);
        if (l.message === "two") sawTwo.resolve();
      },
    });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(logs.slice(0, 2).map((l) => [l.level, l.message]), [["log", "one"], ["warn", "two"]]);
    // Live lines are best effort; the result holds them all.
    assert.deepEqual(res.logs.map((l) => l.message), ["one", "two", "three"]);
  });

  test("onProgress receives every call's start and finish, server and client tools, in order", async () => {
    const events: ProgressEvent[] = [];
    const res = await demo.run({
      source: `const b = await tools.get_budget_by_level({level: "junior"});
        const d = await tools.double({n: 21});
        let e; try { await tools.double({n: -1}); } catch (err) { e = err.code; }
        return {b, d, e};`,
      tools: [{ name: "double", handler: ({ n }: { n: number }) => { if (n < 0) throw new ToolError("negative", "n is negative"); return n * 2; } }],
      onProgress: (e) => events.push(e),
      progressValues: true,
    });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(events.map((e) => [e.phase, e.tool, e.outcome]), [
      ["STARTED", "get_budget_by_level", ""],
      ["FINISHED", "get_budget_by_level", "ok"],
      ["STARTED", "double", ""],
      ["FINISHED", "double", "ok"],
      ["STARTED", "double", ""],
      ["FINISHED", "double", "negative"],
    ]);
    assert.deepEqual(events.map((e) => e.seq), res.trace.flatMap((r) => [r.seq, r.seq]));
    assert.ok(events.every((e) => e.dropped === 0));
    const [, budgetDone, doubleStart, doubleDone, , failed] = events;
    assert.deepEqual(JSON.parse(doubleStart.argumentsJson), { n: 21 });
    assert.equal(doubleDone.resultJson, "42");
    assert.equal(doubleDone.resultBytes, 2);
    assert.deepEqual(JSON.parse(budgetDone.resultJson), (res.value as { b: unknown }).b);
    assert.match(failed.errorMessage, /n is negative/);
    assert.ok(budgetDone.durationMs >= 0 && doubleStart.startedAfterMs >= budgetDone.startedAfterMs);
  });

  test("without progressValues, progress events carry sizes and codes only", async () => {
    const events: ProgressEvent[] = [];
    const res = await demo.run({ source: "return await tools.get_budget_by_level({level: 'mid'})", onProgress: (e) => events.push(e) });
    assert.equal(res.ok, true, res.error?.message);
    assert.deepEqual(events.map((e) => e.phase), ["STARTED", "FINISHED"]);
    assert.ok(events[0].argumentBytes > 0 && events[1].resultBytes > 0);
    assert.ok(events.every((e) => e.argumentsJson === "" && e.resultJson === ""));
  });

  test("an onProgress that throws ends the run with its error", async () => {
    await assert.rejects(plain.run({
      source: "await tools.t({}); while (true) {}",
      tools: [{ name: "t", handler: () => null }],
      limits: { timeoutMs: 20_000 },
      onProgress: () => { throw new Error("progress sink broke"); },
    }), /progress sink broke/);
  });

  test("an onLog that throws ends the run with its error", async () => {
    await assert.rejects(plain.run({
      source: "console.log('x'); while (true) {}",
      limits: { timeoutMs: 20_000 },
      onLog: () => { throw new Error("log sink broke"); },
    }), /log sink broke/);
  });

  test("a client tool named like a server tool is refused by the server", async () => {
    await assert.rejects(demo.run({ source: "return 1", tools: [{ name: "get_expenses", handler: () => [] }] }),
      (e: unknown) => e instanceof RequestError && e.code === status.INVALID_ARGUMENT);
  });

  test("a schema the server cannot compile is INVALID_ARGUMENT", async () => {
    // A valid JavaScript regular expression, but not one the server's engine compiles.
    await assert.rejects(plain.run({ source: "return 1", tools: [{ name: "t", inputSchema: { type: "string", pattern: "(?=a)" }, handler: () => null }] }),
      (e: unknown) => e instanceof RequestError && e.code === status.INVALID_ARGUMENT && /client_tools/.test(e.details));
  });
});

describe("cancellation", () => {
  test("aborting sends CancelExecution; the server answers CANCELLED; handlers see their signal abort", async () => {
    const ac = new AbortController();
    let handlerSignal: AbortSignal | undefined;
    const p = plain.run({
      source: "return await tools.wait({})",
      signal: ac.signal,
      limits: { timeoutMs: 20_000 },
      tools: [{
        name: "wait",
        handler: (_: unknown, ctx: ToolCallContext) => {
          handlerSignal = ctx.signal;
          ac.abort(new Error("user pressed stop"));
          return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("too late")));
        },
      }],
    });
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof CancelledError, String(e));
      assert.equal((e.reason as Error).message, "user pressed stop");
      assert.equal(e.result?.error?.kind, "CANCELLED");
      return true;
    });
    assert.equal(handlerSignal?.aborted, true);
  });

  test("with no grace the stream is cancelled at once", async () => {
    const ac = new AbortController();
    const p = plain.run({
      source: "while (true) {}",
      signal: ac.signal,
      cancelGraceMs: 0,
      limits: { timeoutMs: 20_000 },
      onLog: () => {},
    });
    setImmediate(() => ac.abort());
    await assert.rejects(p, (e: unknown) => e instanceof CancelledError && e.result === undefined);
  });
});

/**
 * chargeServer is the HTTP endpoint behind a ptcd tool "pay.charge": a
 * side effect. onCharge runs when a charge arrives; the request is never
 * answered (the server is killed first).
 */
async function chargeServer(onCharge: () => void): Promise<{ config: string; close: () => void }> {
  const http: Server = createServer((req) => {
    req.resume();
    onCharge();
  });
  await new Promise<void>((res) => http.listen(0, "127.0.0.1", res));
  const port = (http.address() as { port: number }).port;
  const config = join(mkdtempSync(join(tmpdir(), "ptc-ts-lost-")), "ptcd.yaml");
  writeFileSync(config, [
    "tool_sources:",
    "  - name: pay",
    "    type: http",
    "    tools:",
    "      - name: charge",
    "        method: POST",
    `        url: http://127.0.0.1:${port}/charge`,
    "        timeout: 60s",
    "",
  ].join("\n"));
  return { config, close: () => { http.closeAllConnections(); http.close(); } };
}

describe("the server dies after the script called a tool", () => {
  for (const warm of [false, true]) test(`execute${warm ? " on a connected channel" : " as the first call"}: ConnectionLostError with the execution id, not a retryable UNAVAILABLE`, async () => {
    let srv: Ptcd | undefined;
    const charge = await chargeServer(() => void srv?.stop("SIGKILL"));
    srv = await startPtcd({ args: ["--config", charge.config] });
    const c = new Client(srv.addr);
    try {
      if (warm) await c.listTools();
      const p = c.execute({ source: "await tools.pay.charge({amount: 5}); return 'charged'", executionId: "charge-1", limits: { timeoutMs: 60_000 } });
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof ConnectionLostError, String(e));
        assert.equal(e.executionId, "charge-1");
        assert.equal(e.codeName, "UNAVAILABLE");
        assert.deepEqual(e.startedToolCalls, []); // a unary call streams nothing back
        assert.match(e.message, /outcome is unknown/);
        return true;
      });
    } finally {
      c.close();
      charge.close();
      await srv.stop("SIGKILL");
    }
  });

  test("run: ConnectionLostError naming the server tool call that started", async () => {
    let srv: Ptcd | undefined;
    const charged = deferred();
    const seen = deferred();
    const charge = await chargeServer(() => charged.resolve());
    srv = await startPtcd({ args: ["--config", charge.config] });
    // Kill the server once the charge reached the endpoint and the client
    // heard that the call started.
    void Promise.all([charged.promise, seen.promise]).then(() => srv?.stop("SIGKILL"));
    const c = new Client(srv.addr);
    try {
      const p = c.run({
        source: "await tools.pay.charge({amount: 5}); return 'charged'",
        executionId: "charge-2",
        limits: { timeoutMs: 60_000 },
        onProgress: (ev) => { if (ev.phase === "STARTED") seen.resolve(); },
      });
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof ConnectionLostError, String(e));
        assert.equal(e.executionId, "charge-2");
        assert.deepEqual(e.startedToolCalls, [{ seq: 1, tool: "pay.charge", finished: false, outcome: "" }]);
        assert.equal(e.pendingToolCalls, 0);
        assert.match(e.message, /tool calls known to have started: #1 pay\.charge/);
        return true;
      });
    } finally {
      c.close();
      charge.close();
      await srv.stop("SIGKILL");
    }
  });

  test("an unreachable server is a plain RequestError UNAVAILABLE: nothing ran", async () => {
    const srv = await startPtcd();
    const addr = srv.addr;
    await srv.stop("SIGKILL");
    const c = new Client(addr);
    try {
      for (const call of [() => c.execute({ source: "return 1" }), () => c.run({ source: "return 1" })]) {
        await assert.rejects(call(), (e: unknown) => {
          assert.ok(e instanceof RequestError && !(e instanceof ConnectionLostError), String(e));
          assert.equal(e.codeName, "UNAVAILABLE");
          return true;
        });
      }
    } finally {
      c.close();
    }
  });
});

describe("the server goes away", () => {
  test("killed while a client tool call is pending: ConnectionLostError, no hang", async () => {
    const srv = await startPtcd();
    const c = new Client(srv.addr);
    let handlerSignal: AbortSignal | undefined;
    try {
      const p = c.run({
        source: "return await tools.slow({})",
        executionId: "doomed-1",
        limits: { timeoutMs: 60_000 },
        tools: [{
          name: "slow",
          handler: (_: unknown, ctx: ToolCallContext) => {
            handlerSignal = ctx.signal;
            void srv.stop("SIGKILL");
            return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(null)));
          },
        }],
      });
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof ConnectionLostError, String(e));
        assert.equal(e.executionId, "doomed-1");
        assert.equal(e.pendingToolCalls, 1);
        assert.match(e.message, /outcome is unknown/);
        return true;
      });
      assert.equal(handlerSignal?.aborted, true);
    } finally {
      c.close();
      await srv.stop("SIGKILL");
    }
  });

  test("shut down gracefully mid-execution: a CANCELLED result", async () => {
    const srv = await startPtcd();
    const c = new Client(srv.addr);
    try {
      const res = await c.run({
        source: "return await tools.slow({})",
        limits: { timeoutMs: 60_000 },
        tools: [{
          name: "slow",
          handler: (_: unknown, ctx: ToolCallContext) => {
            void srv.stop("SIGTERM");
            return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve(null)));
          },
        }],
      });
      assert.equal(res.error?.kind, "CANCELLED");
    } finally {
      c.close();
      await srv.stop("SIGKILL");
    }
  });
});

describe("close", () => {
  test("calls after close reject with ClientClosedError, calls in flight complete", async () => {
    const c = new Client(plainSrv.addr);
    const entered = deferred();
    const release = deferred();
    const running = c.run({
      source: "return await tools.wait({})",
      tools: [{ name: "wait", handler: async () => { entered.resolve(); await release.promise; return "finished"; } }],
    });
    const executing = c.execute({ source: "let x = 0; for (let i = 0; i < 2e5; i++) x += i; return x" });
    await entered.promise;
    c.close();
    c.close(); // twice is harmless
    const refused: Array<[string, Promise<unknown>]> = [
      ["execute", c.execute({ source: "return 1" })],
      ["run", c.run({ source: "return 1" })],
      ["listTools", c.listTools()],
      ["resume", c.resume("abc", [])],
    ];
    for (const [name, p] of refused) {
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof ClientClosedError, `${name}: ${String(e)}`);
        assert.match(e.message, /client is closed/);
        return true;
      });
    }
    release.resolve();
    assert.equal((await running).value, "finished");
    assert.equal((await executing).ok, true);
    await assert.rejects(c.execute({ source: "return 1" }), ClientClosedError);
  });
});
