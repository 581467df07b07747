// The limits of an execution and their conversion to and from the wire
// Limits, driven by one table (limitFields) that a test checks against the
// generated descriptor: a limit the proto gains and this client does not
// map fails that test.

import { create } from "@bufbuild/protobuf";
import { DurationSchema, type Duration } from "@bufbuild/protobuf/wkt";
import { InvalidRequestError } from "./errors.js";
import { LimitsSchema, type Limits as LimitsPB } from "./gen/ptc/v1/runner_pb.js";

/** Limits bound one execution. Durations are in milliseconds; 0 means the server's default. */
export interface Limits {
  /** timeoutMs bounds the wall-clock time, tool waits included (TIMEOUT). */
  timeoutMs: number;
  /** cpuTimeMs bounds the time the sandbox computes (CPU_LIMIT). */
  cpuTimeMs: number;
  /** memoryBytes bounds the sandbox's memory (MEMORY_LIMIT). */
  memoryBytes: number;
  /** maxToolCalls bounds the tool calls (TOOL_CALL_LIMIT when uncaught). */
  maxToolCalls: number;
  /** maxConcurrentToolCalls bounds the calls in flight (16 by default, at most 256); more wait for a slot. */
  maxConcurrentToolCalls: number;
  /** maxOutputBytes bounds the result JSON (OUTPUT_LIMIT, or truncation with overflow "truncate"). */
  maxOutputBytes: number;
  /** maxLogBytes bounds captured console output; beyond it entries are dropped and logsTruncated is set. */
  maxLogBytes: number;
  /** maxLogEntries bounds the number of captured console entries; beyond it entries are dropped and logsTruncated is set. */
  maxLogEntries: number;
  /**
   * maxResultTokens bounds the approximate model tokens of the result JSON,
   * counted as ToolList.approxTokens counts them (OUTPUT_LIMIT, or
   * truncation with overflow "truncate").
   */
  maxResultTokens: number;
  /** maxPauses bounds how often a resumable execution may pause (PAUSE_LIMIT). */
  maxPauses: number;
  /** maxPausedTimeMs bounds the total time a resumable execution may wait paused (PAUSE_LIMIT). */
  maxPausedTimeMs: number;
}

/** LimitKind is how a limit travels: a Duration, or a 32- or 64-bit integer. */
export type LimitKind = "duration" | "int32" | "int64";

/**
 * limitFields maps each field of the wire Limits, by its protobuf-es
 * name, to the client's key and the field's kind. Every conversion goes
 * through it.
 */
export const limitFields = {
  timeout: { key: "timeoutMs", kind: "duration" },
  cpuTime: { key: "cpuTimeMs", kind: "duration" },
  memoryBytes: { key: "memoryBytes", kind: "int64" },
  maxToolCalls: { key: "maxToolCalls", kind: "int32" },
  maxConcurrentToolCalls: { key: "maxConcurrentToolCalls", kind: "int32" },
  maxOutputBytes: { key: "maxOutputBytes", kind: "int64" },
  maxLogBytes: { key: "maxLogBytes", kind: "int64" },
  maxLogEntries: { key: "maxLogEntries", kind: "int32" },
  maxResultTokens: { key: "maxResultTokens", kind: "int32" },
  maxPauses: { key: "maxPauses", kind: "int32" },
  maxPausedTime: { key: "maxPausedTimeMs", kind: "duration" },
} as const satisfies Record<string, { key: keyof Limits; kind: LimitKind }>;

// Every key of Limits is mapped (a compile-time check).
type Mapped = (typeof limitFields)[keyof typeof limitFields]["key"];
const everyLimitMapped: [Exclude<keyof Limits, Mapped>] extends [never] ? true : never = true;
void everyLimitMapped;

const entries = Object.entries(limitFields) as Array<[string, { key: keyof Limits; kind: LimitKind }]>;
const clientKeys: Array<keyof Limits> = entries.map(([, f]) => f.key);

function durationPB(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1e6);
  return create(DurationSchema, { seconds: BigInt(seconds), nanos });
}

/** durationMs converts a protobuf Duration to milliseconds. */
export function durationMs(d: Duration | undefined): number {
  if (!d) return 0;
  return Number(d.seconds) * 1000 + d.nanos / 1e6;
}

/** checkLimits refuses what is not a Limits: unknown keys, negative, fractional or oversized values. */
export function checkLimits(l: Partial<Limits>): void {
  if (typeof l !== "object" || l === null) throw new InvalidRequestError("limits", "limits must be an object");
  for (const k of Object.keys(l)) {
    const f = entries.find(([, e]) => e.key === k)?.[1];
    if (f === undefined) throw new InvalidRequestError(`limits.${k}`, `unknown limit (use ${clientKeys.join(", ")})`);
    const v = l[k as keyof Limits];
    if (v === undefined) continue;
    const integral = f.kind !== "duration";
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (integral && !Number.isSafeInteger(v))) {
      throw new InvalidRequestError(`limits.${k}`, `must be a non-negative ${integral ? "integer" : "number"}, not ${String(v)}`);
    }
    if (f.kind === "int32" && v > 2 ** 31 - 1) throw new InvalidRequestError(`limits.${k}`, "must fit in 32 bits");
  }
}

/** limitsPB converts checked limits to the wire; absent and zero fields stay unset (the server's default). */
export function limitsPB(l: Partial<Limits>): LimitsPB {
  const out = create(LimitsSchema) as unknown as Record<string, unknown>;
  for (const [field, f] of entries) {
    const v = l[f.key] ?? 0;
    if (v === 0) continue;
    out[field] = f.kind === "duration" ? durationPB(v) : f.kind === "int64" ? BigInt(v) : v;
  }
  return out as unknown as LimitsPB;
}

/** limitsFromPB converts wire limits; unset fields are 0. */
export function limitsFromPB(l: LimitsPB | undefined): Limits {
  const src = (l ?? create(LimitsSchema)) as unknown as Record<string, unknown>;
  const out = {} as Record<keyof Limits, number>;
  for (const [field, f] of entries) {
    const v = src[field];
    out[f.key] = f.kind === "duration" ? durationMs(v as Duration | undefined) : Number(v ?? 0);
  }
  return out;
}
