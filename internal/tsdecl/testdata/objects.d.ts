// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {
  /** Object shapes. */
  shapes(args: ShapesInput): Promise<ShapesOutput>;
};

/** The request's input value. */
declare const input: unknown;

/** Every kind of object property. */
interface ShapesInput {
  $ok?: string;
  "2fast"?: boolean;
  closed?: {
    a: string;
  };
  closed_empty?: {
    [key: string]: never;
  };
  extra_required?: {
    a: string;
    b: number;
    [key: string]: number | string;
  };
  "héllo"?: string;
  map_of_numbers?: {
    [key: string]: number;
  };
  map_with_props?: {
    count?: number;
    id: string;
    [key: string]: boolean | number | string | undefined;
  };
  nested?: {
    deeper?: {
      deepest?: {
        /** A comment with *\/ inside must not end the comment. */
        leaf?: string;
      }[];
    };
  };
  no_schema?: unknown;
  nothing?: never;
  open_empty?: {
    [key: string]: unknown;
  };
  open_with_props?: {
    a?: string;
  };
  patterned?: {
    /**
     * Keys matching /^n-/.
     * Keys matching /^x-/.
     */
    [key: string]: number | string;
  };
  patterned_open?: {
    [key: string]: unknown;
  };
  plain: string;
  untyped_props?: {
    k?: unknown;
  };
  /** Quoted because of the dash. */
  "with-dash": number;
}

interface ShapesOutput {
  [key: string]: string[];
}

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
