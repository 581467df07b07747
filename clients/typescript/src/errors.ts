// The errors the client throws. Every error is a PtcError; each class says
// where the problem is, so callers branch with `instanceof`, never on text:
//
//   InvalidRequestError  the request or a tool definition is invalid; nothing was sent
//   RequestError         the server refused the request (a gRPC status code)
//   ContinuationError    resume refused the continuation (malformed, altered,
//                        expired, used already, ...): a RequestError with a kind
//   ConnectionLostError  the connection ended before the execution's result arrived
//   CancelledError       the caller's AbortSignal ended the execution
//   ClientClosedError    the call was made after Client.close(); nothing was sent
//   ExecutionError       the script failed (kind SCRIPT_ERROR, TIMEOUT, ...): it
//                        is Result.error, and thrown only by unwrap()
//   ToolError            thrown by a client tool handler to fail the call with a code

import { status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import type { Result } from "./result.js";
import { reasonOf } from "./status.js";

/** PtcError is the base class of every error this package throws. */
export class PtcError extends Error {
  override name = "PtcError";
}

/**
 * InvalidRequestError reports a request or client tool definition that the
 * client refused before sending anything: an invalid schema, a duplicate
 * tool name, an input that is not JSON, a missing handler. `path` names the
 * offending field, e.g. `tools[1].inputSchema.properties.city.type`.
 */
export class InvalidRequestError extends PtcError {
  override name = "InvalidRequestError";
  /** path names the offending field of the request. */
  readonly path: string;

  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`ptc: ${path}: ${message}`, options);
    this.path = path;
  }
}

/** grpcCodeName returns the canonical name of a gRPC status code, e.g. "INVALID_ARGUMENT". */
export function grpcCodeName(code: number): string {
  const name = (grpcStatus as unknown as Record<number, string>)[code];
  return typeof name === "string" ? name : `CODE_${code}`;
}

/**
 * RequestError is a request-level problem reported by the server or the
 * transport as a gRPC status: INVALID_ARGUMENT (a malformed request, an
 * unknown tool in allowedTools, a client tool whose name collides with a
 * server tool), RESOURCE_EXHAUSTED (overload; retry later),
 * UNAUTHENTICATED, PERMISSION_DENIED, FAILED_PRECONDITION (an unknown WASM
 * module digest: send the module), UNIMPLEMENTED, UNAVAILABLE (the server
 * cannot be reached).
 */
export class RequestError extends PtcError {
  override name = "RequestError";
  /** code is the numeric gRPC status code (see `status` in @grpc/grpc-js). */
  readonly code: number;
  /** codeName is the status code's name, e.g. "INVALID_ARGUMENT". */
  readonly codeName: string;
  /** details is the server's message. */
  readonly details: string;
  /**
   * reason names the cause in a stable form to branch on, when the server
   * gives one (e.g. "CONTINUATION_EXPIRED", "ANSWERS_INVALID"; see
   * docs/durable.md); "" otherwise.
   */
  readonly reason: string;

  constructor(code: number, details: string, options?: { cause?: unknown; message?: string; reason?: string }) {
    super(options?.message ?? `ptc: ${grpcCodeName(code)}: ${details}`, options);
    this.code = code;
    this.codeName = grpcCodeName(code);
    this.details = details;
    this.reason = options?.reason ?? "";
  }
}

/**
 * ContinuationErrorKind says why `resume` refused a continuation:
 *
 *   MALFORMED     empty, not base64url, truncated, corrupt (INVALID_ARGUMENT)
 *   TAMPERED      altered, or another server's: its signature fails (INVALID_ARGUMENT)
 *   UNKNOWN_KEY   signed with a key this server does not hold (INVALID_ARGUMENT)
 *   WRONG_TENANT  issued to another tenant (PERMISSION_DENIED)
 *   EXPIRED       past its expiry time (FAILED_PRECONDITION)
 *   USED          it resumed its execution already, with other answers, or so long ago
 *                 that the outcome is no longer kept (FAILED_PRECONDITION; a retry with
 *                 the same answers gets the outcome while it is kept)
 *   STATE_GONE    its paused state is gone from the server's store: used, or expired (FAILED_PRECONDITION)
 *   NEEDS_STORE   it refers to a state store this server does not have (FAILED_PRECONDITION)
 *
 * A kind this client does not know yet arrives as the server's reason
 * without its "CONTINUATION_" prefix.
 */
export type ContinuationErrorKind =
  | "MALFORMED"
  | "TAMPERED"
  | "UNKNOWN_KEY"
  | "WRONG_TENANT"
  | "EXPIRED"
  | "USED"
  | "STATE_GONE"
  | "NEEDS_STORE"
  | (string & {});

/**
 * ContinuationError is a RequestError for a continuation that `resume`
 * cannot use: `kind` says why. Nothing ran. A malformed or altered one
 * will never work; an expired or used one means the paused execution
 * cannot go on from it (the continuation of the latest pause is the only
 * live one).
 */
export class ContinuationError extends RequestError {
  override name = "ContinuationError";
  /** kind says why the continuation was refused. */
  readonly kind: ContinuationErrorKind;

  constructor(code: number, details: string, reason: string, options?: { cause?: unknown }) {
    super(code, details, { ...options, reason });
    this.kind = reason.replace(/^CONTINUATION_/, "");
  }
}

const continuationPrefix = "CONTINUATION_";

/** requestError converts a failed call's status into a RequestError, or a ContinuationError for a refused continuation. */
export function requestError(e: ServiceError): RequestError {
  const reason = reasonOf(e);
  if (reason.startsWith(continuationPrefix)) return new ContinuationError(e.code, e.details, reason, { cause: e });
  return new RequestError(e.code, e.details, { cause: e, reason });
}

/**
 * StartedToolCall is a tool call of the script that the client knows had
 * started when the connection was lost (from the server's progress events
 * and the client tool calls it was asked to serve).
 */
export interface StartedToolCall {
  /** seq is the call's ToolCallRecord.seq. */
  seq: number;
  /** tool names the tool called. */
  tool: string;
  /** finished is true when the call's end was reported: its effects happened. */
  finished: boolean;
  /** outcome is "ok" or the call's error code when finished; "" otherwise. */
  outcome: string;
}

/**
 * ConnectionLostError means the connection to the server ended after the
 * execution was sent and before its result arrived: the server went away
 * (crashed, was killed, the network failed) or closed the stream without a
 * result. The execution's outcome is unknown — it may have run, tools and
 * their side effects included — so do not simply retry it as one retries
 * an UNAVAILABLE that never reached the server: `executionId` names it,
 * `startedToolCalls` lists the tool calls known to have started (a
 * Session's, from the server's progress; always empty for a unary
 * execute, which streams nothing), and client tool calls that were being
 * served were abandoned (their handlers' signals are aborted).
 */
export class ConnectionLostError extends RequestError {
  override name = "ConnectionLostError";
  /** executionId is the id of the execution whose outcome is unknown. */
  readonly executionId: string;
  /** pendingToolCalls counts client tool calls that were still being served. */
  readonly pendingToolCalls: number;
  /** startedToolCalls are the tool calls known to have started, in seq order. */
  readonly startedToolCalls: StartedToolCall[];

  constructor(code: number, details: string, executionId: string, pendingToolCalls: number,
    options?: { cause?: unknown; startedToolCalls?: StartedToolCall[] }) {
    const started = [...(options?.startedToolCalls ?? [])].sort((a, b) => a.seq - b.seq);
    const pending = pendingToolCalls === 1 ? "1 client tool call was" : `${pendingToolCalls} client tool calls were`;
    const calls = started.length === 0
      ? ""
      : `; tool calls known to have started: ${started.map((c) => `#${c.seq} ${c.tool}${c.finished ? ` (finished: ${c.outcome})` : ""}`).join(", ")}`;
    super(code, details, {
      cause: options?.cause,
      message:
        `ptc: the connection to the server was lost before execution ${executionId} ended ` +
        `(${grpcCodeName(code)}: ${details}); its outcome is unknown and ${pending} still being served${calls}`,
    });
    this.executionId = executionId;
    this.pendingToolCalls = pendingToolCalls;
    this.startedToolCalls = started;
  }
}

/**
 * CancelledError means the caller's AbortSignal ended the call. `reason` is
 * the signal's reason. `result` is the server's final result (of kind
 * CANCELLED, or whatever the script reached first) when it arrived within
 * the cancellation grace period.
 */
export class CancelledError extends PtcError {
  override name = "CancelledError";
  /** kind is always "CANCELLED", as in ExecutionError.kind. */
  readonly kind = "CANCELLED" as const;
  /** reason is the AbortSignal's reason. */
  readonly reason: unknown;
  /** result is the server's final result, if it arrived before the client gave up waiting. */
  readonly result: Result | undefined;

  constructor(reason: unknown, result?: Result) {
    super(`ptc: the execution was cancelled by the caller${describeReason(reason)}`, { cause: reason });
    this.reason = reason;
    this.result = result;
  }
}

function describeReason(reason: unknown): string {
  if (reason instanceof Error && reason.message) return `: ${reason.message}`;
  if (typeof reason === "string" && reason) return `: ${reason}`;
  return "";
}

/**
 * ClientClosedError means a call was made after Client.close(): nothing
 * was sent. Calls started before close() run to completion.
 */
export class ClientClosedError extends PtcError {
  override name = "ClientClosedError";

  constructor() {
    super("ptc: the client is closed: calls made after close() are refused (calls started before it run to completion); create a new Client");
  }
}

/**
 * ToolError is what a client tool handler throws to fail a call with a
 * code of its choice: the script's call rejects with `err.code === code`
 * and the trace records it. Any other exception fails the call with code
 * "tool_failed" (a thrown value that is not an Error: "tool_panic").
 */
export class ToolError extends PtcError {
  override name = "ToolError";
  /** code is a short machine-readable code, e.g. "not_found". */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
