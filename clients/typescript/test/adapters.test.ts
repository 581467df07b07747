// The code-mode adapters for the Vercel AI SDK and the OpenAI Agents SDK,
// driven by each SDK's own loop with a scripted model, against a real ptcd
// with the demo tools.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, RunContext, Runner, ToolCallError, Usage, setTracingDisabled, type Model, type ModelResponse } from "@openai/agents";
import { generateText, stepCountIs, type StopCondition, type ToolSet } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { CancelledError, Client, PtcError, RequestError } from "@ptcrun/client";
import { ptcTool, ptcTools } from "@ptcrun/client/ai";
import { ptcAgentTool } from "@ptcrun/client/openai-agents";
import { repoRoot, startPtcd, type Ptcd } from "./ptcd.js";

const expensesJS = readFileSync(join(repoRoot, "examples/expenses.js"), "utf8");
const expected = JSON.parse(readFileSync(join(repoRoot, "examples/expenses.expected.json"), "utf8"));

// A client tool served by the harness beside the server's demo tools.
const fx = {
  name: "fx.to_eur",
  description: "Convert US dollars to euros.",
  inputSchema: { type: "object", properties: { usd: { type: "number" } }, required: ["usd"], additionalProperties: false },
  outputSchema: { type: "object", properties: { eur: { type: "number" } }, required: ["eur"] },
  handler: ({ usd }: { usd: number }) => ({ eur: Math.round(usd * 92) / 100 }),
};

let srv: Ptcd;
let client: Client;
before(async () => {
  setTracingDisabled(true);
  srv = await startPtcd({ demoTools: true });
  client = new Client(srv.addr);
});
after(async () => {
  client?.close();
  await srv?.stop();
});

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** scriptedModel answers first with a call of the code tool, then with text. */
function scriptedModel(toolName: string, code: string): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: [
      {
        content: [{ type: "tool-call", toolCallId: "call-1", toolName, input: JSON.stringify({ code }) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage,
        warnings: [],
      },
      {
        content: [{ type: "text", text: "done" }],
        finishReason: { unified: "stop", raw: "stop" },
        usage,
        warnings: [],
      },
    ] as never,
  });
}

describe("Vercel AI SDK", () => {
  test("the description carries the contract and the declarations of server and client tools", async () => {
    const t = await ptcTool({ client, tools: [fx] });
    const d = t.description as string;
    assert.match(d, /body of an async function/);
    assert.match(d, /get_expenses\(args: GetExpensesInput\): Promise<GetExpensesOutput>;/);
    assert.match(d, /fx: \{\n\s+\/\*\* Convert US dollars to euros\. \*\/\n\s+to_eur\(args: \{ usd: number \}\): Promise<\{ eur: number \}>;/);
    assert.match(d, /\{ok: true, result\}/);
  });

  test("the contract is worded for the language the model writes", async () => {
    const js = (await ptcTool({ client })).description as string;
    const ts = (await ptcTool({ client, language: "typescript" })).description as string;
    assert.match(js, /^Run a JavaScript script/);
    assert.match(js, /Write a JavaScript \(ES2022\) script/);
    assert.match(ts, /^Run a TypeScript script/);
    assert.match(ts, /Write a TypeScript script/);
    const only = (await ptcTool({ client, allowedTools: ["get_budget_by_level"] })).description as string;
    assert.match(only, /get_budget_by_level\(/);
    assert.doesNotMatch(only, /get_expenses\(/);
  });

  test("a TypeScript script runs as TypeScript", async () => {
    const t = await ptcTool({ client, language: "typescript" });
    const out = await t.execute!({ code: "const b: {travel_limit: number} = await tools.get_budget_by_level({level: 'staff'}); return b.travel_limit" },
      { toolCallId: "c1", messages: [], context: {} });
    assert.deepEqual(out, { ok: true, result: 4000 });
  });

  test("generateText runs the model's script through the tool", async () => {
    const results: unknown[] = [];
    const tools = await ptcTools({ client, onResult: (r) => results.push(r.stats.toolCalls) });
    const out = await generateText({ model: scriptedModel("run_script", expensesJS), tools, prompt: "Who is over budget?" });
    const step = out.steps[0];
    assert.equal(step.toolResults.length, 1);
    assert.deepEqual(step.toolResults[0].output, { ok: true, result: expected });
    assert.deepEqual(results, [26]);
  });

  test("client tools are served during the model's script", async () => {
    const t = await ptcTool({ client, tools: [fx] });
    const out = await t.execute!({ code: "const b = await tools.get_budget_by_level({level: 'mid'}); return await tools.fx.to_eur({usd: b.travel_limit})" },
      { toolCallId: "c1", messages: [], context: {} });
    assert.deepEqual(out, { ok: true, result: { eur: 1840 } });
  });

  test("a result truncated to fit tells the model how", async () => {
    const t = await ptcTool({ client, overflow: "truncate", limits: { maxOutputBytes: 500 } });
    const out = await t.execute!({ code: "return Array.from({length: 300}, (_, i) => i)" }, { toolCallId: "c1", messages: [], context: {} }) as { ok: boolean; result: unknown[]; truncated?: string };
    assert.equal(out.ok, true);
    assert.match(String(out.result.at(-1)), /^\[truncated: \d+ more items\]$/);
    assert.match(out.truncated ?? "", /^\(ptc: this result was truncated from \d+ to \d+ bytes/);
  });

  test("a failing script answers the model with the kind and how to fix it", async () => {
    const t = await ptcTool({ client });
    const out = await t.execute!({ code: "return tools.nope()" }, { toolCallId: "c1", messages: [], context: {} });
    assert.equal((out as { ok: boolean }).ok, false);
    assert.equal((out as { kind: string }).kind, "SCRIPT_ERROR");
    assert.match((out as { error: string }).error, /nope/);
  });

  test("a transport error is the step's tool-error, and stopWhen can end the loop on it", async () => {
    const own = await startPtcd({ demoTools: true });
    const c = new Client(own.addr);
    try {
      const tools = await ptcTools({ client: c });
      await own.stop("SIGKILL"); // the server is gone before the model's call
      const harnessError: StopCondition<ToolSet> = ({ steps }) =>
        steps.at(-1)?.content.some((p) => p.type === "tool-error" && p.error instanceof PtcError) ?? false;
      const out = await generateText({ model: scriptedModel("run_script", "return 1"), tools, prompt: "go", stopWhen: [stepCountIs(5), harnessError] });
      assert.equal(out.steps.length, 1);
      const part = out.steps[0].content.find((p) => p.type === "tool-error");
      assert.ok(part?.type === "tool-error" && part.error instanceof RequestError, `want a RequestError, got ${String(part)}`);
      assert.equal(part.error.codeName, "UNAVAILABLE");
    } finally {
      c.close();
      await own.stop();
    }
  });

  test("the SDK's abort signal cancels the execution", async () => {
    const t = await ptcTool({ client });
    const ac = new AbortController();
    const p = t.execute!({ code: "while (true) {}" }, { toolCallId: "c1", messages: [], context: {}, abortSignal: ac.signal }) as Promise<unknown>;
    setImmediate(() => ac.abort());
    await assert.rejects(p, CancelledError);
  });
});

/** agentsModel answers first with a call of run_script with these arguments, then with text. */
function agentsModel(args: string): Model {
  let call = 0;
  return {
    async getResponse(): Promise<ModelResponse> {
      call++;
      const output = call === 1
        ? [{ type: "function_call", callId: "call-1", name: "run_script", arguments: args, status: "completed" }]
        : [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "done" }] }];
      return { usage: new Usage(), output: output as never };
    },
    getStreamedResponse() {
      throw new Error("not used");
    },
  };
}

/** runnerOf returns a Runner whose model is always this one. */
function runnerOf(model: Model): Runner {
  return new Runner({ modelProvider: { getModel: () => model }, tracingDisabled: true });
}

/** toolOutputs returns the outputs the model was given for its tool calls. */
function toolOutputs(items: readonly { type: string }[]): string[] {
  return items.filter((i) => i.type === "tool_call_output_item").map((i) => (i as unknown as { output: string }).output);
}

describe("OpenAI Agents SDK", () => {
  test("a Runner runs the model's script through the function tool", async () => {
    const t = await ptcAgentTool({ client, tools: [fx] });
    assert.equal(t.name, "run_script");
    assert.equal(t.strict, true);
    assert.match(t.description, /to_eur\(args: \{ usd: number \}\)/);
    const model = agentsModel(JSON.stringify({ code: expensesJS }));
    const runner = runnerOf(model);
    const agent = new Agent({ name: "analyst", instructions: "Answer with a script.", tools: [t] });
    const res = await runner.run(agent, "Who is over budget?");
    assert.equal(res.finalOutput, "done");
    const [out] = toolOutputs(res.newItems);
    assert.deepEqual(JSON.parse(out), { ok: true, result: expected });
  });

  test("a transport error reaches the harness, not the model", async () => {
    const own = await startPtcd({ demoTools: true });
    const c = new Client(own.addr);
    try {
      const t = await ptcAgentTool({ client: c });
      await own.stop("SIGKILL"); // the server is gone before the model's call
      const runner = runnerOf(agentsModel(JSON.stringify({ code: "return 1" })));
      const agent = new Agent({ name: "analyst", tools: [t] });
      const err = await runner.run(agent, "go").then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ToolCallError, `want the SDK's ToolCallError, got ${String(err)}`);
      assert.ok(err.error instanceof RequestError, `want a RequestError inside, got ${String(err.error)}`);
      assert.equal(err.error.codeName, "UNAVAILABLE");
    } finally {
      c.close();
      await own.stop();
    }
  });

  test("a harness callback that throws reaches the harness", async () => {
    const t = await ptcAgentTool({ client, onResult: () => { throw new TypeError("the harness's bug"); } });
    const runner = runnerOf(agentsModel(JSON.stringify({ code: "return 1" })));
    const err = await runner.run(new Agent({ name: "analyst", tools: [t] }), "go").then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ToolCallError, `want the SDK's ToolCallError, got ${String(err)}`);
    assert.ok(err.error instanceof TypeError && err.error.message === "the harness's bug", `got ${String(err.error)}`);
  });

  test("arguments the model got wrong go back to the model", async () => {
    const t = await ptcAgentTool({ client });
    const runner = runnerOf(agentsModel("{not json"));
    const res = await runner.run(new Agent({ name: "analyst", tools: [t] }), "go");
    assert.equal(res.finalOutput, "done");
    const [out] = toolOutputs(res.newItems);
    assert.match(out, /error/i);
  });

  test("a script the model got wrong goes back to the model", async () => {
    const t = await ptcAgentTool({ client });
    const runner = runnerOf(agentsModel(JSON.stringify({ code: "return (" })));
    const res = await runner.run(new Agent({ name: "analyst", tools: [t] }), "go");
    const [out] = toolOutputs(res.newItems);
    assert.equal(JSON.parse(out).kind, "SYNTAX_ERROR");
  });

  test("invoke returns the failure for the model", async () => {
    const t = await ptcAgentTool({ client });
    const out = await t.invoke(new RunContext(), JSON.stringify({ code: "return (" }));
    assert.equal(JSON.parse(out as string).kind, "SYNTAX_ERROR");
  });
});
