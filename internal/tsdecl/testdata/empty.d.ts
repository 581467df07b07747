// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {};

/** The request's input value. */
declare const input: unknown;

/** One way a value fails a JSON Schema. */
interface PtcSchemaViolation {
  /** JSON pointer of the offending value ("" is the whole value). */
  path: string;
  /** The schema keyword that failed, e.g. "required". */
  keyword: string;
  message: string;
}

/** A call's arguments do not match the tool's input schema (code "invalid_arguments"), or the tool is unknown ("unknown_tool"). */
interface ToolArgumentError {
  name: "ToolArgumentError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

/** The tool failed; code is the tool's own code, or e.g. "tool_failed", "invalid_output", "timeout". */
interface ToolError {
  name: "ToolError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

/** The execution has used up its tool calls (code "tool_call_limit"). */
interface ToolCallLimitError {
  name: "ToolCallLimitError";
  tool: string;
  code: string;
  message: string;
}

/** What a failed tool call rejects with: catch (e) { const err = e as PtcToolError; ... }. */
type PtcToolError = ToolArgumentError | ToolError | ToolCallLimitError;

/** Logs for the operator; never returned to the model. */
declare const console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
};
