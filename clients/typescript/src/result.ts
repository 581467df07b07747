// The outcome of an execution, converted from the wire (ExecuteResponse)
// into plain values: numbers in milliseconds and bytes, parsed JSON.

import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { pendingFromPB, type PendingAction } from "./durable.js";
import { PtcError } from "./errors.js";
import { durationMs, limitsFromPB, type Limits } from "./limits.js";
import {
  ErrorKind as ErrorKindPB,
  ExecutionState,
  type ExecuteResponse,
  type ExecutionError as ExecutionErrorPB,
  type LogEntry as LogEntryPB,
  type ToolCallRecord as ToolCallRecordPB,
} from "./gen/ptc/v1/runner_pb.js";

/**
 * ErrorKind classifies why a script failed, as in the proto enum ErrorKind
 * without its prefix. A kind this client does not know yet arrives as
 * "KIND_<number>".
 */
export type ErrorKind =
  | "SYNTAX_ERROR"
  | "SCRIPT_ERROR"
  | "TIMEOUT"
  | "CPU_LIMIT"
  | "MEMORY_LIMIT"
  | "TOOL_CALL_LIMIT"
  | "OUTPUT_LIMIT"
  | "RESULT_SCHEMA_VIOLATION"
  | "CANCELLED"
  | "INTERNAL"
  | "PAUSE_LIMIT"
  | "RESUME_DIVERGED"
  | `KIND_${number}`;

/** errorKindName maps the wire enum to an ErrorKind. */
export function errorKindName(kind: ErrorKindPB): ErrorKind {
  const name = ErrorKindPB[kind] as string | undefined;
  if (name === undefined || kind === ErrorKindPB.UNSPECIFIED) return `KIND_${kind}`;
  return name as ErrorKind;
}

/**
 * ExecutionError is a classified script failure: the `error` of a Result
 * whose script failed (a normal, successful call). It is an Error, so a
 * harness may throw it (unwrap does).
 */
export class ExecutionError extends PtcError {
  override name = "ExecutionError";
  /** kind classifies the failure. */
  readonly kind: ErrorKind;
  /** line is the 1-based line in the source, 0 when unknown. */
  readonly line: number;
  /** column is the 1-based column in the source, 0 when unknown. */
  readonly column: number;
  /** scriptStack is the script-level stack trace, if any. */
  readonly scriptStack: string;
  /** tool names the tool involved, if any. */
  readonly tool: string;
  /** limit is, for a limit breach, the limit in its unit (bytes, calls, nanoseconds); 0 otherwise. */
  readonly limit: number;
  /** observed is, for a limit breach, the value measured when it was detected: never below limit, and a lower bound where measuring stopped at the limit (an OUTPUT_LIMIT message then says "at least"); 0 for other failures. */
  readonly observed: number;
  /** modelMessage is the server's short, model-facing explanation of the failure. */
  readonly modelMessage: string;
  /** executionId identifies the execution. */
  readonly executionId: string;

  constructor(fields: {
    kind: ErrorKind;
    message: string;
    line?: number;
    column?: number;
    scriptStack?: string;
    tool?: string;
    limit?: number;
    observed?: number;
    modelMessage?: string;
    executionId?: string;
  }) {
    super(`ptc: ${fields.kind}: ${fields.message}`);
    this.kind = fields.kind;
    this.line = fields.line ?? 0;
    this.column = fields.column ?? 0;
    this.scriptStack = fields.scriptStack ?? "";
    this.tool = fields.tool ?? "";
    this.limit = fields.limit ?? 0;
    this.observed = fields.observed ?? 0;
    this.modelMessage = fields.modelMessage ?? "";
    this.executionId = fields.executionId ?? "";
  }
}

/** LogEntry is one line of the script's console output. */
export interface LogEntry {
  /** level is "log", "info", "warn", "error" or "debug". */
  level: string;
  /** message is the line's text. */
  message: string;
  /** atMs is the time since the execution started. */
  atMs: number;
}

/** Stats measure one execution. */
export interface Stats {
  durationMs: number;
  cpuTimeMs: number;
  queueTimeMs: number;
  peakMemoryBytes: number;
  toolCalls: number;
  /** toolResultBytes counts the JSON bytes tools delivered into the sandbox. */
  toolResultBytes: number;
  /** outputBytes is the size of the result JSON (after truncation, when it was truncated). */
  outputBytes: number;
  logBytes: number;
  /** resultTruncated is set when the result was cut to fit the output limits (overflow "truncate"). */
  resultTruncated: boolean;
  /** untruncatedOutputBytes is the size of the result before it was truncated; 0 when it was not. */
  untruncatedOutputBytes: number;
  /** droppedItems counts the array items and object keys truncation removed. */
  droppedItems: number;
  /** cutStrings counts the strings truncation shortened. */
  cutStrings: number;
}

/** ToolCallRecord is the audit record of one tool call. */
export interface ToolCallRecord {
  seq: number;
  tool: string;
  argumentsJson: string;
  ok: boolean;
  /** errorCode is the tool's code, or ptc's (invalid_arguments, tool_failed, invalid_output, ...). */
  errorCode: string;
  errorMessage: string;
  startedAfterMs: number;
  durationMs: number;
  resultBytes: number;
  /** resultJson is set only with includeToolResults. */
  resultJson: string;
}

/**
 * ExecutionStateName says whether an execution ended ("COMPLETED") or a
 * resumable one paused ("REQUIRES_ACTION").
 */
export type ExecutionStateName = "COMPLETED" | "REQUIRES_ACTION";

/** ResultBase holds what every Result has, whatever its state. */
export interface ResultBase {
  /** executionId identifies the execution. */
  executionId: string;
  /**
   * modelMessage is what to paste into a model's context: on success the
   * result JSON, followed, when it was truncated, by one line saying how;
   * on failure a short explanation. See forModel.
   */
  modelMessage: string;
  logs: LogEntry[];
  logsTruncated: boolean;
  stats: Stats;
  trace: ToolCallRecord[];
  /** effectiveLimits are the limits that applied. */
  effectiveLimits: Limits;
}

/** SucceededResult is a completed execution whose script returned a value. */
export interface SucceededResult<T = unknown> extends ResultBase {
  state: "COMPLETED";
  ok: true;
  /** value is the parsed result. */
  value: T;
  /** resultJson is the result as JSON text. */
  resultJson: string;
  error: undefined;
  pendingActions: [];
  continuation: "";
  continuationExpireTime: undefined;
}

/** FailedResult is a completed execution whose script failed: `error` classifies the failure. */
export interface FailedResult extends ResultBase {
  state: "COMPLETED";
  ok: false;
  value: undefined;
  resultJson: "";
  /** error classifies the failure. */
  error: ExecutionError;
  pendingActions: [];
  continuation: "";
  continuationExpireTime: undefined;
}

/**
 * PausedResult is a resumable execution that paused: answer its
 * pendingActions with `resume(continuation, answers)`.
 */
export interface PausedResult extends ResultBase {
  state: "REQUIRES_ACTION";
  ok: false;
  value: undefined;
  resultJson: "";
  error: undefined;
  /**
   * pendingActions are the calls a paused execution waits for, by seq;
   * `resume` needs one answer for each. A paused result's logs are those
   * written since the previous pause; its stats and trace cover the
   * execution so far.
   */
  pendingActions: PendingAction[];
  /** continuation resumes the execution, once, until continuationExpireTime. Opaque: store it as it is. */
  continuation: string;
  /** continuationExpireTime is when the continuation expires. */
  continuationExpireTime: Date | undefined;
}

/**
 * CompletedResult is the outcome of an execution that ended: what `run`
 * and a non-resumable `execute` resolve with. Narrow it on `ok`:
 *
 *   if (res.ok) use(res.value); else console.log(res.error.kind, res.modelMessage);
 */
export type CompletedResult<T = unknown> = SucceededResult<T> | FailedResult;

/**
 * Result is the outcome of one execution. A script that failed is a
 * Result with `ok: false` and `error` set, not an exception. A resumable
 * execution that paused is a Result with `state: "REQUIRES_ACTION"`,
 * `ok: false`, no error, its `pendingActions` and a `continuation` for
 * `resume`. It is a union discriminated by `ok` and `state`: narrow it
 * with `requiresAction(res)` and then `res.ok`.
 */
export type Result<T = unknown> = SucceededResult<T> | FailedResult | PausedResult;

/** requiresAction reports whether a resumable execution paused: answer its pendingActions with `resume`. */
export function requiresAction<T>(result: Result<T>): result is PausedResult {
  return result.state === "REQUIRES_ACTION";
}

/**
 * forModel returns what a harness pastes into the model's context: the
 * result JSON when the script succeeded (with the line saying how it was
 * truncated, when it was), else the short explanation of the failure
 * (kind, line, what to change).
 */
export function forModel<T>(result: Result<T>): string {
  if (requiresAction(result)) {
    return `The script is paused, waiting for: ${result.pendingActions.map((a) => `${a.approval ? "approval of " : ""}tools.${a.tool} (${a.callId})`).join(", ")}.`;
  }
  if (result.ok) return result.modelMessage || result.resultJson;
  return result.modelMessage || result.error.message || "the script failed";
}

/** unwrap returns the result's value, or throws its ExecutionError. */
export function unwrap<T>(result: Result<T>): T {
  if (result.state === "REQUIRES_ACTION") {
    throw new PtcError(`ptc: execution ${result.executionId} is paused, waiting for ${result.pendingActions.length} action(s): answer them with resume(result.continuation, answers)`);
  }
  if (!result.ok) throw result.error;
  return result.value;
}

function dateOf(t: Timestamp | undefined): Date | undefined {
  return t ? new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6)) : undefined;
}

/** logFromPB converts one console entry. */
export function logFromPB(l: LogEntryPB): LogEntry {
  return { level: l.level, message: l.message, atMs: durationMs(l.at) };
}

function recordFromPB(r: ToolCallRecordPB): ToolCallRecord {
  return {
    seq: r.seq,
    tool: r.tool,
    argumentsJson: r.argumentsJson,
    ok: r.ok,
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    startedAfterMs: durationMs(r.startedAfter),
    durationMs: durationMs(r.duration),
    resultBytes: Number(r.resultBytes),
    resultJson: r.resultJson,
  };
}

function errorFromPB(e: ExecutionErrorPB, modelMessage: string, executionId: string): ExecutionError {
  return new ExecutionError({
    kind: errorKindName(e.kind),
    message: e.message,
    line: e.line,
    column: e.column,
    scriptStack: e.stack,
    tool: e.tool,
    limit: Number(e.limit),
    observed: Number(e.observed),
    modelMessage,
    executionId,
  });
}

/** resultFromPB converts an ExecuteResponse into a Result. */
export function resultFromPB(r: ExecuteResponse): Result {
  const st = r.stats;
  const base: ResultBase = {
    executionId: r.executionId,
    modelMessage: r.modelMessage,
    logs: r.logs.map(logFromPB),
    logsTruncated: r.logsTruncated,
    stats: {
      durationMs: durationMs(st?.duration),
      cpuTimeMs: durationMs(st?.cpuTime),
      queueTimeMs: durationMs(st?.queueTime),
      peakMemoryBytes: Number(st?.peakMemoryBytes ?? 0n),
      toolCalls: st?.toolCalls ?? 0,
      toolResultBytes: Number(st?.toolResultBytes ?? 0n),
      outputBytes: Number(st?.outputBytes ?? 0n),
      logBytes: Number(st?.logBytes ?? 0n),
      resultTruncated: st?.resultTruncated ?? false,
      untruncatedOutputBytes: Number(st?.untruncatedOutputBytes ?? 0n),
      droppedItems: Number(st?.droppedItems ?? 0n),
      cutStrings: Number(st?.cutStrings ?? 0n),
    },
    trace: r.trace.map(recordFromPB),
    effectiveLimits: limitsFromPB(r.effectiveLimits),
  };
  if (r.state === ExecutionState.REQUIRES_ACTION) {
    return {
      ...base,
      state: "REQUIRES_ACTION",
      ok: false,
      value: undefined,
      resultJson: "",
      error: undefined,
      pendingActions: r.pendingActions.map(pendingFromPB),
      continuation: r.continuation,
      continuationExpireTime: dateOf(r.continuationExpireTime),
    };
  }
  const ended = { state: "COMPLETED", pendingActions: [], continuation: "", continuationExpireTime: undefined } as const;
  if (r.error !== undefined) {
    return { ...base, ...ended, pendingActions: [], ok: false, value: undefined, resultJson: "", error: errorFromPB(r.error, r.modelMessage, r.executionId) };
  }
  const resultJson = r.resultJson === "" ? "null" : r.resultJson;
  return { ...base, ...ended, pendingActions: [], ok: true, value: JSON.parse(resultJson) as unknown, resultJson, error: undefined };
}

/** completed narrows a result that cannot have paused (run, a non-resumable execute). */
export function completed(r: Result): CompletedResult {
  if (r.state === "REQUIRES_ACTION") {
    throw new PtcError(`ptc: execution ${r.executionId} paused though it is not resumable`);
  }
  return r;
}
