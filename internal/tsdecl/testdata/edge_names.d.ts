// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {
  a$b: {
    /** Dollar and dash in names. */
    "c-d"(args: A$bCDInput): Promise<unknown>;
  };
  /** Awkward names and text: *\/ and   and <script>. */
  edge(args?: EdgeInput): Promise<EdgeOutput>;
};

/** The request's input value. */
declare const input: unknown;

interface A$bCDInput {
  x: string;
}

interface EdgeInput {
  /** The empty property name. */
  ""?: boolean;
  "123"?: number;
  __proto__?: string;
  class?: string;
  "emoji 👍"?: "👍" | "<b>" | "\u0000";
  "new\nline"?: string;
  "quote\"d"?: string;
  /** Keys matching /^a*\/b$/. */
  [key: string]: string | boolean | number | "👍" | "<b>" | "\u0000" | undefined;
}

interface EdgeOutput {
  a?: EdgeDef;
  b?: EdgeT123;
  c?: EdgeDJVu;
}

type EdgeDef = string;

type EdgeT123 = number;

type EdgeDJVu = boolean;

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
