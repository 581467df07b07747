// @ptcrun/client/openai-agents: code mode for the OpenAI Agents SDK.
//
//   const agent = new Agent({ name: "analyst", tools: [await ptcAgentTool({ client })] });

import { tool, type FunctionTool } from "@openai/agents";
import { codeMode, type CodeMode, type CodeModeOptions } from "./codemode.js";
import { PtcError } from "./errors.js";

export type { CodeModeOptions, CodeModeOutput } from "./codemode.js";

/**
 * ptcAgentTool returns an Agents SDK function tool (strict JSON Schema
 * parameters {code}) that runs the model's script in ptc. Its description
 * carries the script contract and the TypeScript declarations of the
 * server's tools (and of options.tools, served by this process). The run's
 * abort signal cancels the execution. The model gets the output as JSON
 * text: {ok: true, result} or {ok: false, kind, error}.
 *
 * What the model cannot fix — a RequestError (transport, authentication,
 * overload), a ConnectionLostError, a CancelledError, any other PtcError,
 * or an exception thrown by a callback of the harness (onResult, onLog,
 * ...) — rejects the run (`run(agent, ...)` throws it), rather than
 * reaching the model as the SDK's default "An error occurred while running
 * the tool". Arguments the model got wrong go back to it as the SDK
 * words them.
 */
export async function ptcAgentTool(options: CodeModeOptions): Promise<FunctionTool<unknown, CodeMode["parameters"], string>> {
  const cm = await codeMode(options);
  return tool({
    name: cm.name,
    description: cm.description,
    parameters: cm.parameters,
    strict: true,
    execute: async (input, _context, details) => {
      const { code } = input as { code: string };
      try {
        return JSON.stringify(await cm.execute(code, details?.signal));
      } catch (e) {
        throw new HarnessError(e);
      }
    },
    errorFunction: (_context, error) => {
      // Throwing here makes the SDK reject the run with the error.
      if (error instanceof HarnessError) throw error.error;
      if (error instanceof PtcError) throw error;
      return "An error occurred while running the tool. Please try again.";
    },
  });
}

/**
 * HarnessError carries what the code-mode tool threw past the SDK's error
 * handling, so that errorFunction can tell it from the SDK's own errors
 * (invalid arguments from the model) and rethrow it unchanged.
 */
class HarnessError extends Error {
  constructor(readonly error: unknown) {
    super("ptc: the code-mode tool failed", { cause: error });
  }
}
