// Tools this script may call. The script is the body of an async function:
// await the calls and `return` a small JSON value as the result.

declare const tools: {
  calendar: {
    /** List calendar events between two instants. */
    "list-events"(args: CalendarListEventsInput): Promise<unknown>;
  };
  /** A reserved word is still a valid method name. */
  delete(args: DeleteInput): Promise<unknown>;
  github: {
    repos: {
      /** Get a repository. */
      get(args: GithubReposGetInput): Promise<GithubReposGetOutput>;
    };
    /** Search issues and pull requests. */
    search_issues(args: GithubSearchIssuesInput): Promise<GithubSearchIssuesOutput>;
  };
  /** A tool whose type names would clash with PtcInput. */
  ptc(args: PtcInput2): Promise<unknown>;
  slack: {
    /** Post a message to a channel. */
    post_message(args: SlackPostMessageInput): Promise<SlackPostMessageOutput>;
  };
  x: {
    /** Name that collides with x_y in PascalCase. */
    y(args?: XYInput): Promise<unknown>;
  };
  /** Name that collides with x.y in PascalCase. */
  x_y(args?: XYInput2): Promise<unknown>;
};

/** The request's input value. */
declare const input: unknown;

interface CalendarListEventsInput {
  /** @format date-time */
  from: string;
  /** @format date-time */
  to: string;
}

interface DeleteInput {
  id: string;
}

interface GithubReposGetInput {
  owner: string;
  repo: string;
}

interface GithubReposGetOutput {
  default_branch: string;
  stars: number;
}

interface GithubSearchIssuesInput {
  /**
   * @minimum 1
   * @maximum 100
   */
  limit?: number;
  query: string;
  /** @default "open" */
  state?: "open" | "closed" | "all";
}

interface GithubSearchIssuesOutput {
  issues: {
    labels: string[];
    number: number;
    title: string;
  }[];
  total: number;
}

interface PtcInput2 {
  v: string;
}

interface SlackPostMessageInput {
  channel: string;
  text: string;
}

interface SlackPostMessageOutput {
  ts: string;
}

interface XYInput {
  n?: number;
}

interface XYInput2 {
  [key: string]: unknown;
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
