// Durable executions on the client side: the calls a paused execution
// waits for, the answers that resume it (checked before anything is
// sent), and the decisions of approval callbacks. See docs/durable.md.

import { create } from "@bufbuild/protobuf";
import { InvalidRequestError } from "./errors.js";
import {
  ActionAnswerSchema,
  ActionKind,
  ApprovalSchema,
  ToolErrorSchema,
  type ActionAnswer as ActionAnswerPB,
  type PendingAction as PendingActionPB,
} from "./gen/ptc/v1/runner_pb.js";
import { NotJSONError, toJSONStrict } from "./json.js";

/** ActionKind says what a pending call waits for: a client tool's answer, or an approval. */
export type PendingActionKind = "CLIENT_TOOL" | "APPROVAL";

/**
 * PendingAction is one call a paused execution waits for (Result
 * .pendingActions), or one an approval callback decides.
 */
export interface PendingAction {
  /** callId names the call in its Answer. */
  callId: string;
  /** kind is "CLIENT_TOOL" (answer with an output or an error) or "APPROVAL" (approve or deny). */
  kind: PendingActionKind;
  /** approval is true when the call waits for approval of a server tool. */
  approval: boolean;
  /** seq is the call's 1-based number among the execution's calls. */
  seq: number;
  /** tool is the tool called: a client tool, or the server tool that runs if approved. */
  tool: string;
  /** arguments are the call's arguments, parsed; the server validated them against the tool's input schema. */
  arguments: unknown;
  /** argumentsJson is the call's arguments as JSON text. */
  argumentsJson: string;
  /** idempotencyKey is "<execution_id>/<seq>", the same on every resume: deduplicate side effects with it. */
  idempotencyKey: string;
  /** reason says why a call needs approval; "" for a client tool call. */
  reason: string;
  /**
   * traceparent is the W3C trace context of the call's `execute_tool` span
   * on the server (started when the script made the call; a resume that
   * re-runs the execution ends it at the pause), to parent the spans that
   * serve or decide the call. "" when the server records no span for it.
   */
  traceparent: string;
  /** tracestate is the W3C `tracestate` that goes with traceparent; often "". */
  tracestate: string;
}

/** pendingFromPB converts one pending action. */
export function pendingFromPB(a: PendingActionPB): PendingAction {
  let args: unknown = null;
  if (a.argumentsJson !== "") {
    try {
      args = JSON.parse(a.argumentsJson);
    } catch {
      args = undefined; // the server validated it; keep argumentsJson as sent
    }
  }
  const approval = a.kind === ActionKind.APPROVAL;
  return {
    callId: a.callId,
    kind: approval ? "APPROVAL" : "CLIENT_TOOL",
    approval,
    seq: a.seq,
    tool: a.tool,
    arguments: args,
    argumentsJson: a.argumentsJson,
    idempotencyKey: a.idempotencyKey,
    reason: a.reason,
    traceparent: a.traceparent,
    tracestate: a.tracestate,
  };
}

/**
 * Answer answers one pending action in `resume`: for a client tool call
 * exactly one of `output` (any JSON value; checked against the tool's
 * output schema by the server) and `error` (the script's call rejects
 * with a ToolError of that code); for an approval `approve: true`, or
 * `deny: true` with a `reason` the script sees as the message of a
 * ToolError with code "denied". The `Answer` helpers build them.
 */
export interface Answer {
  callId: string;
  output?: unknown;
  error?: { code: string; message?: string };
  approve?: boolean;
  deny?: boolean;
  reason?: string;
}

type Target = PendingAction | string;
const idOf = (t: Target) => (typeof t === "string" ? t : t?.callId);

/** Answer builds answers for `resume`, from a pending action or its call id. */
export const Answer = {
  /** output answers a client tool call with its result (undefined is null). */
  output(action: Target, value: unknown): Answer {
    return { callId: idOf(action), output: value };
  },
  /** error fails a client tool call: the script's call rejects with a ToolError of this code. */
  error(action: Target, code: string, message = ""): Answer {
    return { callId: idOf(action), error: { code, message } };
  },
  /** approve lets a server tool call run (once, with its idempotency key). */
  approve(action: Target): Answer {
    return { callId: idOf(action), approve: true };
  },
  /** deny refuses a server tool call: the script's call rejects with code "denied" and this reason. */
  deny(action: Target, reason = ""): Answer {
    return { callId: idOf(action), deny: true, reason };
  },
};

/** maxReasonBytes is the longest denial reason the server takes. */
export const maxReasonBytes = 4096;

/** answerKeys are the fields of an Answer. */
const answerKeys = new Set(["callId", "output", "error", "approve", "deny", "reason"]);

/** answersPB checks answers and converts them for the wire; nothing is sent if it throws. */
export function answersPB(answers: readonly Answer[]): ActionAnswerPB[] {
  if (!Array.isArray(answers)) throw new InvalidRequestError("answers", "answers must be an array (one answer per pending action)");
  const seen = new Set<string>();
  return answers.map((a, i) => {
    const path = `answers[${i}]`;
    if (typeof a !== "object" || a === null) throw new InvalidRequestError(path, "an answer must be an object {callId, output | error | approve | deny}");
    if (typeof a.callId !== "string" || a.callId === "") throw new InvalidRequestError(`${path}.callId`, "an answer needs the callId of a pending action");
    if (seen.has(a.callId)) throw new InvalidRequestError(`${path}.callId`, `call ${JSON.stringify(a.callId)} is answered twice`);
    seen.add(a.callId);
    // Default-deny: an answer is read only when its shape is plain. A key
    // the client does not know (a misspelt "approved") or an approve that
    // is not a boolean ("true") is refused, not guessed at.
    for (const k of Object.keys(a)) {
      if (!answerKeys.has(k)) throw new InvalidRequestError(`${path}.${k}`, `is not a field of an answer (callId, output, error, approve, deny, reason)`);
    }
    for (const k of ["approve", "deny"] as const) {
      if (a[k] !== undefined && typeof a[k] !== "boolean") throw new InvalidRequestError(`${path}.${k}`, "must be a boolean (true to give this outcome)");
    }
    const given = (["output", "error", "approve", "deny"] as const).filter((k) => (k === "approve" || k === "deny" ? a[k] === true : k in a));
    if (given.length !== 1) {
      throw new InvalidRequestError(path, `give exactly one of output, error, approve and deny (got ${given.length === 0 ? "none" : given.join(" and ")})`);
    }
    if (a.reason !== undefined && typeof a.reason !== "string") throw new InvalidRequestError(`${path}.reason`, "must be a string");
    if (a.reason !== undefined && Buffer.byteLength(a.reason) > maxReasonBytes) {
      throw new InvalidRequestError(`${path}.reason`, `is longer than ${maxReasonBytes} bytes`);
    }
    let outcome: ActionAnswerPB["outcome"];
    switch (given[0]) {
      case "output":
        try {
          outcome = { case: "outputJson", value: toJSONStrict(a.output === undefined ? null : a.output) };
        } catch (e) {
          throw new InvalidRequestError(`${path}.output${(e as NotJSONError).path ?? ""}`, `the output is not JSON: ${(e as Error).message}`, { cause: e });
        }
        break;
      case "error": {
        const err = a.error;
        if (typeof err !== "object" || err === null || typeof err.code !== "string" || err.code === "") {
          throw new InvalidRequestError(`${path}.error.code`, "a client tool error needs a code, e.g. \"not_found\"");
        }
        if (err.message !== undefined && typeof err.message !== "string") throw new InvalidRequestError(`${path}.error.message`, "must be a string");
        outcome = { case: "error", value: create(ToolErrorSchema, { code: err.code, message: err.message ?? "" }) };
        break;
      }
      default:
        outcome = { case: "approval", value: create(ApprovalSchema, { approved: given[0] === "approve", reason: a.reason ?? "" }) };
    }
    return create(ActionAnswerSchema, { callId: a.callId, outcome });
  });
}

/** ApprovalContext describes one approval request to its callback. */
export interface ApprovalContext {
  /** deadline is when the execution's timeout expires, if the server sent one. */
  deadline: Date | undefined;
  /** signal aborts when the decision is no longer wanted (the execution ended). */
  signal: AbortSignal;
}

/**
 * ApprovalDecision is what an approval callback returns: `true` approves,
 * `false` denies; an object gives the denial's reason (which the script
 * sees as the message of a ToolError with code "denied").
 */
export type ApprovalDecision = boolean | { approved: boolean; reason?: string };

/** ApprovalCallback decides calls that need approval, while a `run` goes on. */
export type ApprovalCallback = (action: PendingAction, ctx: ApprovalContext) => ApprovalDecision | Promise<ApprovalDecision>;

/**
 * decide runs the callback and normalises its decision. It never throws:
 * no callback, a callback that throws, or a decision of the wrong shape
 * denies the call (fail closed), saying why; a reason is cut to what the
 * server takes. Only `true`, or an object whose `approved` is `true` and
 * which holds nothing but `approved` and a string `reason`, approves: a
 * truthy value that is not `true` ("yes", 1), an `approved` that is not a
 * boolean, or an object with other fields (which might qualify the
 * approval) denies.
 */
export async function decide(cb: ApprovalCallback | undefined, action: PendingAction, ctx: ApprovalContext): Promise<{ approved: boolean; reason: string }> {
  if (cb === undefined) return { approved: false, reason: "this client has no approval callback (onApproval)" };
  let d: ApprovalDecision;
  try {
    d = await cb(action, ctx);
  } catch (e) {
    return { approved: false, reason: cut(`the approval callback failed: ${e instanceof Error ? e.message || e.name : String(e)}`) };
  }
  if (typeof d === "boolean") return { approved: d, reason: "" };
  if (
    typeof d === "object" && d !== null && !Array.isArray(d) && typeof d.approved === "boolean" &&
    (d.reason === undefined || typeof d.reason === "string") &&
    Object.keys(d).every((k) => k === "approved" || k === "reason")
  ) {
    return { approved: d.approved, reason: cut(d.reason ?? "") };
  }
  return { approved: false, reason: "the approval callback returned neither a boolean nor {approved, reason}" };
}

/** cut shortens s to at most maxReasonBytes of UTF-8, on a character boundary. */
function cut(s: string): string {
  if (Buffer.byteLength(s) <= maxReasonBytes) return s;
  let out = "";
  let n = 0;
  for (const ch of s) {
    n += Buffer.byteLength(ch);
    if (n > maxReasonBytes - 3) break;
    out += ch;
  }
  return out + "…";
}
