// What a caller asks for, and its conversion to the wire ExecuteRequest,
// with every check that can be done before anything is sent.

import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { randomBytes } from "node:crypto";
import { InvalidRequestError } from "./errors.js";
import { ExecuteRequestSchema, Language as LanguagePB, OverflowPolicy, ScriptSchema, type ExecuteRequest } from "./gen/ptc/v1/runner_pb.js";
import { NotJSONError, toJSONStrict } from "./json.js";
import { checkLimits, limitsPB, type Limits } from "./limits.js";
import { schemaJSON, type SchemaLike } from "./schema.js";
import { checkToolName } from "./tools.js";

/** Language is the language of a script. */
export type Language = "javascript" | "typescript" | "wasm" | "python";

/** Overflow is what happens to a result larger than the output limits. */
export type Overflow = "fail" | "truncate";

const overflows: Record<Overflow, OverflowPolicy> = {
  fail: OverflowPolicy.FAIL,
  truncate: OverflowPolicy.TRUNCATE,
};

/** ExecuteOptions describe one execution against the server's tools. */
export interface ExecuteOptions {
  /** source is the script: the body of an async function (`return` gives the result). */
  source?: string;
  /** language defaults to "javascript". */
  language?: Language;
  /** wasmModule is a WASI module for language "wasm". */
  wasmModule?: Uint8Array;
  /** moduleSha256 names a module the server already holds (lowercase hex). */
  moduleSha256?: string;
  /** input is the JSON value bound to `input` in the script. */
  input?: unknown;
  /** limits bound the execution; absent fields take the server's defaults, values above its ceilings are clamped. */
  limits?: Partial<Limits>;
  /**
   * overflow says what happens to a result over maxOutputBytes or
   * maxResultTokens: "fail" (the default) fails the execution with
   * OUTPUT_LIMIT; "truncate" cuts the result structurally until it fits,
   * keeping valid JSON (arrays keep their first items and end with
   * "[truncated: N more items]", objects their first keys with a
   * "[truncated]" key, strings their beginning with "…[truncated: N more
   * bytes]"), and reports it in Result.stats (resultTruncated, ...) and
   * Result.modelMessage. A result whose smallest truncated form does not
   * fit still fails with OUTPUT_LIMIT.
   */
  overflow?: Overflow;
  /** allowedTools names the server tools the script may call; absent or empty allows all (unless noServerTools). */
  allowedTools?: string[];
  /**
   * noServerTools gives the script no server tools at all, whatever
   * allowedTools says: only the caller's client tools.
   */
  noServerTools?: boolean;
  /** resultSchema is a JSON Schema (or Zod schema) the result must satisfy (else RESULT_SCHEMA_VIOLATION). */
  resultSchema?: SchemaLike;
  /**
   * executionId identifies the execution in logs, traces and idempotency
   * keys: at most 128 ASCII letters, digits and "._:-". The client makes
   * one up when absent, so that it is known even if the connection fails.
   */
  executionId?: string;
  /** deterministic seeds Math.random (seed) and makes Date a virtual clock (clockStart). */
  deterministic?: boolean;
  seed?: number | bigint;
  clockStart?: Date;
  /** includeToolResults puts each call's result into Result.trace. */
  includeToolResults?: boolean;
  /**
   * resumable (execute only) lets the execution pause at calls only the
   * caller can answer — calls to `tools` and calls that need approval —
   * instead of failing them: the Result then has state "REQUIRES_ACTION",
   * pendingActions and a continuation for `resume`. A resumable execution
   * is deterministic (seed; the clock starts at clockStart, or when it
   * starts). run refuses it: a Session asks onApproval instead.
   */
  resumable?: boolean;
  /**
   * requireApproval names server tools whose calls the caller wants to
   * approve, besides those the server requires approval for (an unknown
   * name is INVALID_ARGUMENT).
   */
  requireApproval?: string[];
  /**
   * signal cancels the execution. Execute cancels the RPC; run sends
   * CancelExecution and waits up to cancelGraceMs for the server's result.
   * Either way the call rejects with CancelledError.
   */
  signal?: AbortSignal;
}

const languages: Record<Language, LanguagePB> = {
  javascript: LanguagePB.JAVASCRIPT,
  typescript: LanguagePB.TYPESCRIPT,
  wasm: LanguagePB.WASM,
  python: LanguagePB.PYTHON,
};

const executionIdRE = /^[A-Za-z0-9._:-]{1,128}$/;

/** newExecutionId returns a fresh random execution id. */
export function newExecutionId(): string {
  return "ptc-" + randomBytes(12).toString("hex");
}

/** executeRequestPB checks o and converts it to the wire request. */
export function executeRequestPB(o: ExecuteOptions): ExecuteRequest {
  if (typeof o !== "object" || o === null) throw new InvalidRequestError("request", "the request must be an object");
  const language = o.language ?? (o.wasmModule !== undefined || o.moduleSha256 !== undefined ? "wasm" : "javascript");
  const lang = languages[language];
  if (lang === undefined) throw new InvalidRequestError("language", `unknown language ${JSON.stringify(language)} (use javascript, typescript, wasm or python)`);
  if (language === "wasm") {
    if (o.wasmModule === undefined && !o.moduleSha256) throw new InvalidRequestError("wasmModule", "a wasm script needs wasmModule or moduleSha256");
    if (o.wasmModule !== undefined && !(o.wasmModule instanceof Uint8Array)) throw new InvalidRequestError("wasmModule", "must be a Uint8Array");
  } else if (typeof o.source !== "string" || o.source.trim() === "") {
    throw new InvalidRequestError("source", "the script source is empty");
  }
  let inputJson = "";
  if (o.input !== undefined) {
    try {
      inputJson = toJSONStrict(o.input);
    } catch (e) {
      throw new InvalidRequestError("input" + ((e as NotJSONError).path ?? ""), `the input is not JSON: ${(e as Error).message}`, { cause: e });
    }
  }
  const executionId = o.executionId ?? newExecutionId();
  if (typeof executionId !== "string" || !executionIdRE.test(executionId)) {
    throw new InvalidRequestError("executionId", "use at most 128 ASCII letters, digits and \"._:-\"");
  }
  if (o.allowedTools !== undefined && (!Array.isArray(o.allowedTools) || o.allowedTools.some((t) => typeof t !== "string"))) {
    throw new InvalidRequestError("allowedTools", "must be an array of tool names");
  }
  for (const [i, name] of (o.allowedTools ?? []).entries()) checkToolName(name, `allowedTools[${i}]`);
  if (o.requireApproval !== undefined && (!Array.isArray(o.requireApproval) || o.requireApproval.some((t) => typeof t !== "string"))) {
    throw new InvalidRequestError("requireApproval", "must be an array of tool names");
  }
  for (const [i, name] of (o.requireApproval ?? []).entries()) checkToolName(name, `requireApproval[${i}]`);
  if (o.resumable !== undefined && typeof o.resumable !== "boolean") throw new InvalidRequestError("resumable", "must be a boolean");
  if (o.noServerTools !== undefined && typeof o.noServerTools !== "boolean") throw new InvalidRequestError("noServerTools", "must be a boolean");
  let seed = 0n;
  if (o.seed !== undefined) {
    const ok = typeof o.seed === "bigint" ? o.seed >= 0n && o.seed < 2n ** 64n : Number.isSafeInteger(o.seed) && o.seed >= 0;
    if (!ok) throw new InvalidRequestError("seed", "must be an unsigned 64-bit integer");
    seed = BigInt(o.seed);
  }
  if (o.clockStart !== undefined && (!(o.clockStart instanceof Date) || Number.isNaN(o.clockStart.getTime()))) {
    throw new InvalidRequestError("clockStart", "must be a valid Date");
  }
  if (o.overflow !== undefined && !Object.hasOwn(overflows, o.overflow)) {
    throw new InvalidRequestError("overflow", `unknown overflow policy ${JSON.stringify(o.overflow)} (use "fail" or "truncate")`);
  }
  const limits = o.limits ?? {};
  checkLimits(limits);
  return create(ExecuteRequestSchema, {
    script: create(ScriptSchema, {
      language: lang,
      source: o.source ?? "",
      wasmModule: o.wasmModule ?? new Uint8Array(),
      moduleSha256: o.moduleSha256 ?? "",
    }),
    inputJson,
    limits: o.limits === undefined ? undefined : limitsPB(limits),
    allowedTools: o.allowedTools ?? [],
    noServerTools: o.noServerTools ?? false,
    resultSchemaJson: o.resultSchema === undefined ? "" : schemaJSON(o.resultSchema, "resultSchema", "output"),
    executionId,
    deterministic: o.deterministic ?? false,
    seed,
    clockStart: o.clockStart ? create(TimestampSchema, {
      seconds: BigInt(Math.floor(o.clockStart.getTime() / 1000)),
      nanos: (((o.clockStart.getTime() % 1000) + 1000) % 1000) * 1e6,
    }) : undefined,
    includeToolResults: o.includeToolResults ?? false,
    resumable: o.resumable ?? false,
    requireApproval: o.requireApproval ?? [],
    overflowPolicy: o.overflow === undefined ? OverflowPolicy.UNSPECIFIED : overflows[o.overflow],
  });
}
