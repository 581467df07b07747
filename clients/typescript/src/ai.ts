// @ptcrun/client/ai: code mode for the Vercel AI SDK (package `ai`).
//
//   const tools = await ptcTools({ client });
//   await generateText({ model, tools, prompt });

import { jsonSchema, tool, type Tool } from "ai";
import { codeMode, type CodeModeOptions, type CodeModeOutput } from "./codemode.js";

export type { CodeModeOptions, CodeModeOutput } from "./codemode.js";

/** CodeInput is the code-mode tool's argument. */
export interface CodeInput {
  code: string;
}

/**
 * ptcTool returns an AI SDK tool that runs the model's script in ptc. Its
 * description carries the script contract and the TypeScript declarations
 * of the server's tools (and of options.tools, served by this process).
 * The SDK's abortSignal cancels the execution.
 */
export async function ptcTool(options: CodeModeOptions): Promise<Tool<CodeInput, CodeModeOutput>> {
  const cm = await codeMode(options);
  return tool<CodeInput, CodeModeOutput, Record<string, unknown>>({
    description: cm.description,
    inputSchema: jsonSchema<CodeInput>(cm.parameters),
    execute: ({ code }, { abortSignal }) => cm.execute(code, abortSignal),
  });
}

/** ptcTools returns { [name]: ptcTool(options) }, to spread into an AI SDK `tools` object. */
export async function ptcTools(options: CodeModeOptions): Promise<Record<string, Tool<CodeInput, CodeModeOutput>>> {
  return { [options.name ?? "run_script"]: await ptcTool(options) };
}
