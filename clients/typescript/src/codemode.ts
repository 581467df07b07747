// Code mode: one tool with a `code` argument that runs the model's script
// in ptc. The adapters (ai.ts, openai-agents.ts) wrap it for their SDKs;
// this file holds what they share: the description a model reads and the
// conversion of an execution into what the model sees.

import type { Client, RunOptions } from "./client.js";
import { InvalidRequestError, RequestError } from "./errors.js";
import { status } from "@grpc/grpc-js";
import type { Result } from "./result.js";
import { prepareTools } from "./tools.js";
import { withClientTools } from "./tsdecl.js";
import { create } from "@bufbuild/protobuf";
import { ToolDefinitionSchema } from "./gen/ptc/v1/runner_pb.js";

/** CodeModeOptions configure a code-mode tool. */
export interface CodeModeOptions extends Omit<RunOptions, "source" | "signal" | "language"> {
  /** client is the ptcd client that runs the scripts. */
  client: Client;
  /** name is the tool's name for the model; default "run_script". */
  name?: string;
  /** language the model writes; default "javascript". */
  language?: "javascript" | "typescript";
  /**
   * onResult receives every execution's full Result (stats, trace, logs)
   * before the model sees its summary.
   */
  onResult?: (result: Result, code: string) => void;
  /** signal cancels the executions this tool starts (besides the SDK's own signal). */
  signal?: AbortSignal;
}

/**
 * CodeModeOutput is what the model sees of one execution. With overflow
 * "truncate", a result cut to fit the output limits comes with
 * `truncated`: the server's line saying how, and what to do about it.
 */
export type CodeModeOutput =
  | { ok: true; result: unknown; truncated?: string }
  | { ok: false; kind: string; error: string };

/** CodeMode is an SDK-neutral code-mode tool. */
export interface CodeMode {
  name: string;
  /** description carries the script contract and the TypeScript declarations of the tools. */
  description: string;
  /** parameters is the JSON Schema of the tool's arguments: {code: string}. */
  parameters: {
    type: "object";
    properties: { code: { type: "string"; description: string } };
    required: ["code"];
    additionalProperties: false;
  };
  /** execute runs one script and returns what the model sees. */
  execute(code: string, signal?: AbortSignal): Promise<CodeModeOutput>;
}

/**
 * codeMode asks the server for its tools' declarations and the script
 * contract (ListTools with TypeScript, restricted to allowedTools) and
 * returns the tool. Client tools in `tools` are declared beside the
 * server's and served by this process during each execution.
 */
export async function codeMode(options: CodeModeOptions): Promise<CodeMode> {
  const { client, name = "run_script", language = "javascript", onResult, signal: ownSignal, ...run } = options;
  const tools = prepareTools(run.tools, (d) => create(ToolDefinitionSchema, d));
  // The server words its prompt for TypeScript when asked for declarations;
  // a JavaScript tool takes the prompt from a second, plain answer.
  const names = run.allowedTools?.length ? run.allowedTools : undefined;
  const [list, plain] = await Promise.all([
    client.listTools({ names, includeTypescript: true, signal: ownSignal }),
    language === "javascript" ? client.listTools({ names, signal: ownSignal }) : undefined,
  ]);
  const prompt = (plain ?? list).prompt;
  const declarations = withClientTools(list.typescript, [...tools.values()].map((t) => ({ ...t, name: t.definition.name })));
  const lang = language === "typescript" ? "TypeScript" : "JavaScript";
  const description = [
    `Run a ${lang} script in a sandbox that can call the tools declared below, and get back only what the script returns.`,
    "Use it instead of calling tools one at a time: loop, filter and aggregate in the script.",
    "",
    prompt.trim(),
    "",
    "The tool answers {ok: true, result} with the script's return value, or {ok: false, kind, error} saying what failed and how to fix it.",
    "",
    language === "javascript" ? "The tools, declared in TypeScript (write the script in JavaScript):" : "The tools:",
    "```ts",
    declarations.trim(),
    "```",
  ].join("\n");
  return {
    name,
    description,
    parameters: {
      type: "object",
      properties: { code: { type: "string", description: `The ${lang} script: the body of an async function that returns the result.` } },
      required: ["code"],
      additionalProperties: false,
    },
    async execute(code: string, signal?: AbortSignal): Promise<CodeModeOutput> {
      const signals = [signal, ownSignal].filter((s): s is AbortSignal => s !== undefined);
      try {
        const res = await client.run({
          ...run,
          language,
          source: code,
          signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0],
        });
        onResult?.(res, code);
        if (res.ok) {
          const out: CodeModeOutput = { ok: true, result: res.value ?? null };
          if (res.stats.resultTruncated) out.truncated = res.modelMessage.slice(res.resultJson.length).trim() || "the result was truncated to fit the output limits";
          return out;
        }
        return { ok: false, kind: res.error?.kind ?? "INTERNAL", error: res.modelMessage || (res.error?.message ?? "the script failed") };
      } catch (e) {
        // What the model can fix (an empty or oversized script) goes back to
        // it; everything else (transport, auth, cancellation) is the harness's.
        if (e instanceof InvalidRequestError && e.path === "source") return { ok: false, kind: "INVALID_REQUEST", error: e.message };
        if (e instanceof RequestError && e.code === status.INVALID_ARGUMENT) return { ok: false, kind: "INVALID_REQUEST", error: e.details };
        throw e;
      }
    },
  };
}
