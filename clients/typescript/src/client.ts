// Client: the public entry point. One Client holds one gRPC channel to a
// ptcd server and is safe to share.

import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { answersPB, type Answer, type ApprovalCallback } from "./durable.js";
import { CancelledError, ClientClosedError, ConnectionLostError, InvalidRequestError, requestError } from "./errors.js";
import {
  ListToolsRequestSchema,
  ResumeRequestSchema,
  SessionStartSchema,
  ToolDefinitionSchema,
  type ExecuteResponse,
  type ListToolsResponse,
  type ResumeResponse,
} from "./gen/ptc/v1/runner_pb.js";
import type { ProgressEvent } from "./progress.js";
import { executeRequestPB, type ExecuteOptions } from "./request.js";
import { completed, resultFromPB, type CompletedResult, type LogEntry, type Result } from "./result.js";
import { Transport, type Connected } from "./rpc.js";
import type { JSONSchema } from "./schema.js";
import { lostCodes, runSession } from "./session.js";
import { prepareTools, type ClientTool, type ClientToolDefinition } from "./tools.js";

/**
 * ExecuteRequestOptions describe one unary execution. With `resumable`,
 * `tools` declares client tools (their handlers, if any, are not used):
 * a call to one pauses the execution and is answered in `resume`.
 */
export interface ExecuteRequestOptions extends ExecuteOptions {
  tools?: readonly ClientToolDefinition[];
}

/** ClientOptions configure a Client. */
export interface ClientOptions {
  /** credentials secure the channel; the default is plaintext (grpc.credentials.createInsecure()). */
  credentials?: grpc.ChannelCredentials;
  /** token is sent as "authorization: Bearer <token>" on every call. */
  token?: string;
  /** metadata is sent on every call. */
  metadata?: Record<string, string>;
  /**
   * channelOptions are passed to @grpc/grpc-js (keepalive, message sizes,
   * ...). The client accepts messages up to 64 MiB (ptcd's largest response)
   * unless "grpc.max_receive_message_length" says otherwise.
   */
  channelOptions?: grpc.ClientOptions;
}

/** RunOptions describe one execution whose client tools this process serves. */
export interface RunOptions extends Omit<ExecuteOptions, "resumable"> {
  /** resumable is refused by run: a Session asks onApproval instead of pausing (use execute). */
  resumable?: never;
  /**
   * tools are the client tools the script may call besides the server's.
   * Their handlers run concurrently, but at most limits.maxConcurrentToolCalls
   * (16 by default) of the script's calls are in flight at once: further
   * calls wait for a slot.
   */
  tools?: readonly ClientTool[];
  /** onLog receives each console line live. If it throws, the execution is cancelled and run rejects with its error. */
  onLog?: (entry: LogEntry) => void;
  /**
   * onProgress receives an event as each tool call of the script starts
   * and as it finishes, server and client tools alike, in order, as the
   * server streams them (best effort: see ProgressEvent.dropped). If it
   * throws, the execution is cancelled and run rejects with its error.
   */
  onProgress?: (event: ProgressEvent) => void;
  /** progressValues makes progress events carry the calls' arguments, results and error messages (otherwise sizes, codes and durations only). */
  progressValues?: boolean;
  /**
   * cancelGraceMs bounds how long, after `signal` aborts, run waits for
   * the server's CANCELLED result before it cancels the stream. Default 5000.
   */
  cancelGraceMs?: number;
  /**
   * onApproval decides, while the script runs, each call of a server tool
   * that needs approval (the server's configuration or requireApproval):
   * resolve true (the tool runs, once) or false, or {approved, reason}
   * (the script's call rejects with a ToolError of code "denied" and the
   * reason). Decisions run concurrently. Without onApproval, or if it
   * throws, the call is denied.
   */
  onApproval?: ApprovalCallback;
}

/** ResumeOptions go with a resume. */
export interface ResumeOptions {
  /** wasmModule is the module of a paused WASM execution, when the server answered FAILED_PRECONDITION (WASM_MODULE_MISSING). */
  wasmModule?: Uint8Array;
  /** signal cancels the call; the continuation may have been used up if the server got it. */
  signal?: AbortSignal;
}

/** ListToolsOptions select the server tools to describe. */
export interface ListToolsOptions {
  /** query ranks tools by relevance to this text. */
  query?: string;
  /** limit caps the number of tools; 0 or absent means all. */
  limit?: number;
  /** names restricts the answer to these tools (an unknown name is INVALID_ARGUMENT). */
  names?: string[];
  /** includeTypescript asks for TypeScript declarations of the tools. */
  includeTypescript?: boolean;
  signal?: AbortSignal;
}

/** ToolDefinition describes a server tool. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** inputSchema is the arguments' JSON Schema; undefined when any JSON is accepted. */
  inputSchema: JSONSchema | undefined;
  /** outputSchema is the result's JSON Schema; undefined when not validated. */
  outputSchema: JSONSchema | undefined;
  /** requiresApproval means every call of the tool waits for the caller's approval. */
  requiresApproval: boolean;
}

/** ToolList is the answer of listTools. */
export interface ToolList {
  tools: ToolDefinition[];
  /** typescript declares `tools` and `input` for a script (with includeTypescript). */
  typescript: string;
  /** prompt tells a model how to write a ptc script. */
  prompt: string;
  /** approxTokens estimates the model tokens of prompt, typescript and descriptions. */
  approxTokens: number;
  /** matches are the relevance scores with a query, in the order of tools. */
  matches: Array<{ name: string; score: number }>;
}

/**
 * defaultMaxReceiveBytes is the largest message the client accepts unless
 * channelOptions say otherwise: ptcd's default grpc.max_send_bytes, so
 * that results up to the 16 MiB output ceiling, with their trace, arrive.
 */
const defaultMaxReceiveBytes = 64 << 20;

/** defaultCancelGraceMs is RunOptions.cancelGraceMs's default. */
const defaultCancelGraceMs = 5000;

/**
 * Client talks to a ptcd server: `execute` runs a script against the
 * server's tools, `run` also serves client tools from this process, and
 * `listTools` describes the server's tools for a model. Request problems
 * reject with RequestError (a gRPC code) or InvalidRequestError (found
 * before sending); a script that fails resolves with `ok: false` and a
 * classified `error`.
 */
export class Client {
  private readonly transport: Transport;
  private readonly metadata: grpc.Metadata;
  /** closed is set by close(); active counts the calls started and not yet settled. */
  private closed = false;
  private active = 0;

  /** Create a client of the server at target, e.g. "127.0.0.1:7878". */
  constructor(target: string, options: ClientOptions = {}) {
    if (typeof target !== "string" || target === "") throw new InvalidRequestError("target", "the server address is empty");
    this.transport = new Transport(target, options.credentials ?? grpc.credentials.createInsecure(), {
      "grpc.max_receive_message_length": defaultMaxReceiveBytes,
      ...options.channelOptions,
    });
    this.metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries(options.metadata ?? {})) this.metadata.set(k, v);
    if (options.token !== undefined) this.metadata.set("authorization", `Bearer ${options.token}`);
  }

  /**
   * close refuses further calls: they reject with ClientClosedError,
   * sending nothing. Calls in flight run to completion; the channel closes
   * when the last of them settles (at once when none is in flight).
   * Closing twice does nothing.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.active === 0) this.transport.close();
  }

  /** track runs one call on the channel, or refuses it once the client is closed. */
  private track<T>(call: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new ClientClosedError());
    this.active++;
    let p: Promise<T>;
    try {
      p = call();
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.finally(() => {
      this.active--;
      if (this.closed && this.active === 0) this.transport.close();
    });
  }

  /** listTools describes the server's tools. */
  listTools(options: ListToolsOptions = {}): Promise<ToolList> {
    const req = create(ListToolsRequestSchema, {
      query: options.query ?? "",
      limit: options.limit ?? 0,
      names: options.names ?? [],
      includeTypescript: options.includeTypescript ?? false,
    });
    return this.unary<ListToolsResponse, ToolList>(options.signal,
      (md, cb) => this.transport.listTools(req, md, {}, cb),
      (res) => ({
        tools: res.tools.map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchemaJson === "" ? undefined : (JSON.parse(t.inputSchemaJson) as JSONSchema),
          outputSchema: t.outputSchemaJson === "" ? undefined : (JSON.parse(t.outputSchemaJson) as JSONSchema),
          requiresApproval: t.requiresApproval,
        })),
        typescript: res.typescript,
        prompt: res.prompt,
        approxTokens: res.approxTokens,
        matches: res.matches.map((m) => ({ name: m.name, score: m.score })),
      }));
  }

  /**
   * execute runs a script against the server's tools in one unary call.
   * Client tools need run, or `resumable`: then a call to one of `tools`,
   * or one that needs approval, pauses the execution — the Result has
   * state "REQUIRES_ACTION", its pendingActions and a continuation — and
   * `resume` goes on.
   *
   * If the connection drops once the request could have reached the
   * server, the call rejects with ConnectionLostError (the outcome is
   * unknown: the script may have run, side effects included), not with a
   * RequestError UNAVAILABLE, which means the server was never reached.
   */
  execute(options: ExecuteRequestOptions & { resumable: true }): Promise<Result>;
  execute(options: ExecuteRequestOptions & { resumable?: false }): Promise<CompletedResult>;
  execute(options: ExecuteRequestOptions): Promise<Result>;
  execute(options: ExecuteRequestOptions): Promise<Result> {
    let req;
    try {
      const o = options as RunOptions;
      if (o?.onLog !== undefined || o?.onApproval !== undefined) {
        throw new InvalidRequestError(o.onLog !== undefined ? "onLog" : "onApproval", "onLog and onApproval need run (a Session stream); a resumable execute pauses for approvals instead");
      }
      if (o?.tools !== undefined && o.resumable !== true) {
        throw new InvalidRequestError("tools", "client tools need run (a Session stream), or execute with resumable: true (calls to them pause the execution)");
      }
      req = executeRequestPB(options);
      req.clientTools = [...prepareTools(options.tools, (d) => create(ToolDefinitionSchema, d), false).values()].map((t) => t.definition);
    } catch (e) {
      return Promise.reject(e);
    }
    const resumable = options.resumable === true;
    const executionId = req.executionId;
    let connected: Connected | undefined;
    return this.unary<ExecuteResponse, Result>(options.signal, (md, cb) => {
      connected = this.transport.connected();
      return this.transport.execute(req, md, {}, cb);
    }, (res) => {
      const r = resultFromPB(res);
      return resumable ? r : completed(r);
    }, (e) => {
      // A unary call streams nothing back: once the request could have
      // reached the server, a dropped connection leaves the outcome unknown.
      if (connected?.reached() && lostCodes.has(e.code)) return new ConnectionLostError(e.code, e.details, executionId, 0, { cause: e });
      return requestError(e);
    });
  }

  /**
   * resume goes on with a paused execution (a Result with state
   * "REQUIRES_ACTION"), on this server or any that shares its
   * continuation keys: the continuation and one answer per pending action
   * (see Answer). It resolves with the execution's next state: paused
   * again, with a new continuation, or completed. A continuation resumes
   * once. A refused continuation rejects with ContinuationError (its
   * `kind`: EXPIRED, USED, TAMPERED, MALFORMED, ...); answers that do not
   * fit the pending actions with RequestError INVALID_ARGUMENT (reason
   * "ANSWERS_INVALID", the message names the call) — then nothing ran
   * and the same continuation can be sent again with the answers fixed.
   *
   * Retrying is safe: once the server accepted a resume, the execution
   * goes on even if this call is cut off (deadline, abort, dropped
   * connection), and resuming again with the same continuation and the
   * same answers (in any order) returns the same next state — the
   * same new continuation — for the server's durable.outcome_retention
   * (10 minutes by default), running nothing twice. While the execution
   * still runs on another replica the retry rejects with RequestError
   * UNAVAILABLE, reason "RESUME_IN_PROGRESS": retry shortly. Other
   * answers, or a retry after the retention, reject with
   * ContinuationError kind USED.
   */
  resume(continuation: string, answers: readonly Answer[], options: ResumeOptions = {}): Promise<Result> {
    let req;
    try {
      if (typeof continuation !== "string" || continuation === "") {
        throw new InvalidRequestError("continuation", "the continuation is empty: pass the continuation of a paused Result");
      }
      if (options.wasmModule !== undefined && !(options.wasmModule instanceof Uint8Array)) throw new InvalidRequestError("wasmModule", "must be a Uint8Array");
      req = create(ResumeRequestSchema, { continuation, answers: answersPB(answers), wasmModule: options.wasmModule ?? new Uint8Array() });
    } catch (e) {
      return Promise.reject(e);
    }
    return this.unary<ResumeResponse, Result>(options.signal, (md, cb) => this.transport.resume(req, md, {}, cb), (res) => {
      if (!res.execution) throw new InvalidRequestError("execution", "the server's Resume response holds no execution");
      return resultFromPB(res.execution);
    });
  }

  /**
   * run runs a script over a Session stream, serving `tools` from this
   * process: each call of the script to one of them runs its handler
   * (concurrently with the others) and the answer goes back into the
   * script. A handler's ToolError fails the call with its code; any other
   * exception with "tool_failed"; a result that is not JSON with
   * "invalid_output". Console lines stream to onLog, tool call progress
   * to onProgress; calls that need approval are decided by onApproval.
   * `signal` cancels.
   */
  run(options: RunOptions): Promise<CompletedResult> {
    let start;
    let tools;
    try {
      if ((options as ExecuteOptions)?.resumable) throw new InvalidRequestError("resumable", "a resumable execution runs with execute (run holds a stream and asks onApproval instead of pausing)");
      if (options?.onApproval !== undefined && typeof options.onApproval !== "function") throw new InvalidRequestError("onApproval", "must be a function");
      tools = prepareTools(options.tools, (d) => create(ToolDefinitionSchema, d));
      const execute = executeRequestPB(options);
      execute.streamLogs = options.onLog !== undefined;
      if (options.onLog !== undefined && typeof options.onLog !== "function") throw new InvalidRequestError("onLog", "must be a function");
      if (options.onProgress !== undefined && typeof options.onProgress !== "function") throw new InvalidRequestError("onProgress", "must be a function");
      if (options.progressValues !== undefined && typeof options.progressValues !== "boolean") throw new InvalidRequestError("progressValues", "must be a boolean");
      // Progress always streams: it tells a lost connection which tool
      // calls had started. onProgress, when set, sees it too.
      execute.streamProgress = true;
      execute.progressValues = options.onProgress !== undefined && options.progressValues === true;
      start = create(SessionStartSchema, { execute, clientTools: [...tools.values()].map((t) => t.definition) });
    } catch (e) {
      return Promise.reject(e);
    }
    const grace = options.cancelGraceMs ?? defaultCancelGraceMs;
    if (!Number.isFinite(grace) || grace < 0) return Promise.reject(new InvalidRequestError("cancelGraceMs", "must be a non-negative number"));
    return this.track(() => runSession(this.transport, start, {
      tools,
      onLog: options.onLog,
      onProgress: options.onProgress,
      onApproval: options.onApproval,
      signal: options.signal,
      cancelGraceMs: grace,
      metadata: this.metadata.clone(),
    }));
  }

  /** unary makes one unary call that the signal cancels, converting its answer. */
  private unary<R, T>(signal: AbortSignal | undefined,
    start: (md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: R) => void) => grpc.ClientUnaryCall,
    convert: (res: R) => T,
    failed: (e: grpc.ServiceError) => Error = requestError): Promise<T> {
    return this.track(() => new Promise<T>((resolve, reject) => {
      if (signal?.aborted) {
        reject(new CancelledError(signal.reason));
        return;
      }
      let call: grpc.ClientUnaryCall | undefined = undefined;
      const onAbort = () => call?.cancel();
      call = start(this.metadata.clone(), (err, res) => {
        signal?.removeEventListener("abort", onAbort);
        if (signal?.aborted) reject(new CancelledError(signal.reason));
        else if (err) reject(failed(err));
        else {
          try {
            resolve(convert(res as R));
          } catch (e) {
            reject(e);
          }
        }
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    }));
  }
}
