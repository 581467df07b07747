// Tool call progress streamed by a Session (ToolProgress), converted into
// plain values.

import { ToolProgress_Phase, type ToolProgress } from "./gen/ptc/v1/runner_pb.js";
import { durationMs } from "./limits.js";

/**
 * ProgressEvent reports one tool call of the script starting or finishing,
 * server and client tools alike (refused calls included). Events arrive in
 * the order the server made them. Progress is best effort: when the client
 * reads too slowly the server drops events, and the next one delivered
 * counts them in `dropped`.
 */
export interface ProgressEvent {
  /** phase is "STARTED" when the script made the call, "FINISHED" when it returned or failed. */
  phase: "STARTED" | "FINISHED";
  /** seq is the call's ToolCallRecord.seq. */
  seq: number;
  /** tool names the tool called. */
  tool: string;
  /** startedAfterMs is the time from the start of the execution to the call. */
  startedAfterMs: number;
  /** durationMs is the time the call took; set when finished. */
  durationMs: number;
  /** argumentBytes is the size of the call's JSON arguments. */
  argumentBytes: number;
  /** resultBytes is the size of the JSON result; set when finished with outcome "ok". */
  resultBytes: number;
  /** outcome is "ok" or the call's error code (as ToolCallRecord.errorCode); "" when started. */
  outcome: string;
  /** dropped counts the events dropped just before this one because the client read too slowly. */
  dropped: number;
  /** argumentsJson is the call's JSON arguments, with progressValues only; "" otherwise. */
  argumentsJson: string;
  /** resultJson is the call's JSON result, with progressValues only, when finished with outcome "ok". */
  resultJson: string;
  /** errorMessage describes a failed call, with progressValues only. */
  errorMessage: string;
}

/** progressFromPB converts one ToolProgress message. */
export function progressFromPB(p: ToolProgress): ProgressEvent {
  return {
    phase: p.phase === ToolProgress_Phase.FINISHED ? "FINISHED" : "STARTED",
    seq: p.seq,
    tool: p.tool,
    startedAfterMs: durationMs(p.startedAfter),
    durationMs: durationMs(p.duration),
    argumentBytes: Number(p.argumentBytes),
    resultBytes: Number(p.resultBytes),
    outcome: p.outcome,
    dropped: Number(p.dropped),
    argumentsJson: p.argumentsJson,
    resultJson: p.resultJson,
    errorMessage: p.errorMessage,
  };
}
