// @ptcrun/client/openai-agents: code mode for the OpenAI Agents SDK.
//
//   const agent = new Agent({ name: "analyst", tools: [await ptcAgentTool({ client })] });

import { tool, type FunctionTool } from "@openai/agents";
import { codeMode, type CodeMode, type CodeModeOptions } from "./codemode.js";

export type { CodeModeOptions, CodeModeOutput } from "./codemode.js";

/**
 * ptcAgentTool returns an Agents SDK function tool (strict JSON Schema
 * parameters {code}) that runs the model's script in ptc. Its description
 * carries the script contract and the TypeScript declarations of the
 * server's tools (and of options.tools, served by this process). The run's
 * abort signal cancels the execution. The model gets the output as JSON
 * text: {ok: true, result} or {ok: false, kind, error}.
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
      return JSON.stringify(await cm.execute(code, details?.signal));
    },
  });
}
