// One Session stream: the start message, the client tool calls served
// concurrently and answered in the order they finish, live logs,
// tool call progress, cancellation, and the final result. Every way the stream can end
// settles the promise exactly once; nothing waits without a bound.

import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { decide, pendingFromPB, type ApprovalCallback } from "./durable.js";
import { CancelledError, ConnectionLostError, ToolError, requestError, type StartedToolCall } from "./errors.js";
import {
  ActionAnswerSchema,
  ApprovalSchema,
  CancelExecutionSchema,
  PendingActionSchema,
  SessionRequestSchema,
  ToolErrorSchema,
  ToolResultSchema,
  type ApprovalRequest,
  type SessionResponse,
  type SessionStart,
  type ToolCall,
  type ToolResult,
} from "./gen/ptc/v1/runner_pb.js";
import { toJSONStrict } from "./json.js";
import { completed, logFromPB, resultFromPB, type CompletedResult, type LogEntry } from "./result.js";
import { progressFromPB, type ProgressEvent } from "./progress.js";
import type { SessionCall, Transport } from "./rpc.js";
import type { PreparedTool, ToolCallContext } from "./tools.js";

/** SessionOptions are what one session needs beyond its start message. */
export interface SessionOptions {
  tools: Map<string, PreparedTool>;
  onLog: ((entry: LogEntry) => void) | undefined;
  onProgress: ((event: ProgressEvent) => void) | undefined;
  onApproval: ApprovalCallback | undefined;
  signal: AbortSignal | undefined;
  cancelGraceMs: number;
  metadata: grpc.Metadata;
}

// Status codes that, after the server has answered anything, mean the
// connection itself failed rather than that the server refused the request.
export const lostCodes = new Set([grpc.status.UNAVAILABLE, grpc.status.INTERNAL, grpc.status.UNKNOWN, grpc.status.CANCELLED]);

/** runSession runs one execution over a Session stream and resolves with its result. */
export function runSession(transport: Transport, start: SessionStart, o: SessionOptions): Promise<CompletedResult> {
  const executionId = start.execute?.executionId ?? "";
  return new Promise<CompletedResult>((resolve, reject) => {
    if (o.signal?.aborted) {
      reject(new CancelledError(o.signal.reason));
      return;
    }
    const call: SessionCall = transport.session(o.metadata, {});
    // ended aborts when the session settles: handlers still running see
    // their signal abort and their answers are dropped.
    const ended = new AbortController();
    let finished = false;
    let heard = false; // the server has sent something: the session is established
    let cancelReason: { reason: unknown } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    const inflight = new Set<string>();
    // started holds the tool calls the script is known to have made, by
    // seq: the server streams progress on every session (run asks for it
    // whether or not onProgress is set) so that a lost connection can say
    // which calls may have had their effects.
    const started = new Map<number, StartedToolCall>();
    const lost = (code: number, details: string, cause?: unknown) =>
      new ConnectionLostError(code, details, executionId, inflight.size, { cause, startedToolCalls: [...started.values()] });

    const finish = (outcome: { result: CompletedResult } | { error: Error }) => {
      if (finished) return;
      finished = true;
      o.signal?.removeEventListener("abort", onAbort);
      clearTimeout(graceTimer);
      ended.abort(new Error("the execution ended"));
      if ("result" in outcome) {
        call.end();
        resolve(outcome.result);
      } else {
        call.cancel();
        reject(outcome.error);
      }
    };

    const send = (msg: Parameters<typeof create<typeof SessionRequestSchema>>[1]) => {
      if (finished) return;
      try {
        call.write(create(SessionRequestSchema, msg));
      } catch {
        // The stream already failed; its 'error' event settles the session.
      }
    };

    const onAbort = () => {
      if (finished || cancelReason) return;
      cancelReason = { reason: o.signal?.reason };
      send({ msg: { case: "cancel", value: create(CancelExecutionSchema, { reason: describe(o.signal?.reason) }) } });
      // The server answers a cancel with a CANCELLED result; without one
      // in time, give up on the stream (its end cancels the execution too).
      const giveUp = () => finish({ error: new CancelledError(cancelReason!.reason) });
      if (o.cancelGraceMs === 0) giveUp();
      else graceTimer = setTimeout(giveUp, o.cancelGraceMs);
    };
    o.signal?.addEventListener("abort", onAbort, { once: true });

    const serve = async (tc: ToolCall) => {
      inflight.add(tc.callId);
      const outcome = await answer(o.tools.get(tc.tool), tc, ended.signal);
      inflight.delete(tc.callId);
      send({ msg: { case: "toolResult", value: create(ToolResultSchema, { callId: tc.callId, outcome }) } });
    };

    const approve = async (ar: ApprovalRequest) => {
      const action = pendingFromPB(ar.action ?? create(PendingActionSchema));
      const deadline = ar.deadline ? new Date(Number(ar.deadline.seconds) * 1000 + ar.deadline.nanos / 1e6) : undefined;
      const d = await decide(o.onApproval, action, { deadline, signal: ended.signal });
      const answer = create(ActionAnswerSchema, {
        callId: action.callId,
        outcome: { case: "approval", value: create(ApprovalSchema, { approved: d.approved, reason: d.reason }) },
      });
      send({ msg: { case: "approvalAnswer", value: answer } });
    };

    // callback runs a log or progress callback. One that throws is the
    // harness's bug: stop the execution and report it rather than lose it.
    const callback = (f: () => void) => {
      try {
        f();
      } catch (e) {
        finish({ error: e instanceof Error ? e : new Error(String(e)) });
      }
    };

    call.on("metadata", () => {
      heard = true;
    });
    call.on("data", (m: SessionResponse) => {
      heard = true;
      if (finished) return;
      switch (m.msg.case) {
        case "toolCall":
          void serve(m.msg.value);
          break;
        case "log":
          if (o.onLog) {
            const entry = logFromPB(m.msg.value);
            callback(() => o.onLog!(entry));
          }
          break;
        case "progress": {
          const event = progressFromPB(m.msg.value);
          const known = started.get(event.seq);
          if (event.phase === "STARTED" && known === undefined) started.set(event.seq, { seq: event.seq, tool: event.tool, finished: false, outcome: "" });
          if (event.phase === "FINISHED") started.set(event.seq, { seq: event.seq, tool: event.tool, finished: true, outcome: event.outcome });
          if (o.onProgress) callback(() => o.onProgress!(event));
          break;
        }
        case "result": {
          let res: CompletedResult;
          try {
            res = completed(resultFromPB(m.msg.value));
          } catch (e) {
            finish({ error: e as Error });
            break;
          }
          finish(cancelReason ? { error: new CancelledError(cancelReason.reason, res) } : { result: res });
          break;
        }
        case "approvalRequest":
          void approve(m.msg.value);
          break;
        case "protocolError":
          // Sent only for a malformed answer, which this client never
          // sends; the session goes on.
          break;
      }
    });
    call.on("error", (e: grpc.ServiceError) => {
      if (finished) return;
      if (cancelReason) {
        finish({ error: new CancelledError(cancelReason.reason) });
      } else if (heard && lostCodes.has(e.code)) {
        finish({ error: lost(e.code, e.details, e) });
      } else {
        finish({ error: requestError(e) });
      }
    });
    call.on("end", () => {
      // 'error' comes before 'end' for a failed status; let it settle first.
      setImmediate(() => {
        if (!finished) {
          finish({ error: lost(grpc.status.UNAVAILABLE, "the server closed the session without a result") });
        }
      });
    });

    send({ msg: { case: "start", value: start } });
  });
}

/** answer runs one client tool call and turns its outcome into a ToolResult outcome. */
async function answer(tool: PreparedTool | undefined, tc: ToolCall, ended: AbortSignal): Promise<ToolResult["outcome"]> {
  try {
    return { case: "outputJson", value: await callTool(tool, tc, ended) };
  } catch (e) {
    return { case: "error", value: toolErrorPB(e) };
  }
}

async function callTool(tool: PreparedTool | undefined, tc: ToolCall, ended: AbortSignal): Promise<string> {
  if (tool === undefined) throw new ToolError("unknown_tool", `this client does not serve tool ${JSON.stringify(tc.tool)}`);
  let args: unknown;
  try {
    args = tc.argumentsJson === "" ? null : JSON.parse(tc.argumentsJson);
  } catch {
    throw new ToolError("invalid_arguments", "the arguments are not valid JSON");
  }
  if (tool.parse) {
    const r = await tool.parse(args);
    if (r.issues) {
      const why = r.issues.map((i) => (i.path?.length ? `${i.path.map(String).join(".")}: ` : "") + i.message).join("; ");
      throw new ToolError("invalid_arguments", `the arguments do not match the tool's schema: ${why}`);
    }
    args = r.value;
  }
  const deadline = tc.deadline ? new Date(Number(tc.deadline.seconds) * 1000 + tc.deadline.nanos / 1e6) : undefined;
  const signal = deadline
    ? AbortSignal.any([ended, AbortSignal.timeout(Math.max(0, deadline.getTime() - Date.now()))])
    : ended;
  const ctx: ToolCallContext = {
    tool: tc.tool,
    callId: tc.callId,
    idempotencyKey: tc.idempotencyKey,
    deadline,
    signal,
    traceparent: tc.traceparent,
    tracestate: tc.tracestate,
  };
  const out = await tool.handler(args, ctx);
  try {
    return toJSONStrict(out === undefined ? null : out);
  } catch (e) {
    throw new ToolError("invalid_output", `the result of client tool ${tc.tool} cannot be sent as JSON: ${(e as Error).message}`);
  }
}

function toolErrorPB(e: unknown) {
  if (e instanceof ToolError) return create(ToolErrorSchema, { code: e.code || "tool_failed", message: e.message });
  if (e instanceof Error) return create(ToolErrorSchema, { code: "tool_failed", message: e.message || e.name });
  return create(ToolErrorSchema, { code: "tool_panic", message: `the tool failed unexpectedly: it threw ${describe(e)}, not an Error` });
}

function describe(v: unknown): string {
  if (v instanceof Error) return v.message || v.name;
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
