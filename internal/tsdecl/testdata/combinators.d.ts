// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {
  /** Combinators, literals and boolean schemas. */
  combine(args?: CombineInput): Promise<CombineOutput>;
};

/** The request's input value. */
declare const input: unknown;

interface CombineInput {
  all_of?: {
    id: string;
  } & {
    tags?: string[];
  };
  all_of_union?: string | number;
  any_of?: string | number;
  const_number?: 42;
  const_object?: {
    a: true;
    b: [1, "two", null];
  };
  empty_schema?: unknown;
  enum_empty?: never;
  enum_huge_number?: number | 3;
  enum_mixed?: "a" | 1 | -2.5 | true | null | {
    [key: string]: never;
  } | [];
  false_schema?: never;
  integer_and_number?: number;
  nullable_string?: string | null;
  one_of_objects?: {
    kind: "circle";
    radius: number;
  } | {
    kind: "square";
    side: number;
  };
  string_escape?: "quote \" backslash \\ line\u2028sep";
  true_schema?: unknown;
  type_list?: string | number | null;
  with_required_only?: {
    a?: string;
    b?: string;
  };
}

type CombineOutput = string | null;

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
