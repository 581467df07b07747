// Client tools: tools that the harness serves itself over a Session
// stream. A definition is checked completely before anything is sent.

import { InvalidRequestError } from "./errors.js";
import type { ToolDefinition as ToolDefinitionPB } from "./gen/ptc/v1/runner_pb.js";
import { isStandardJSONSchema, schemaJSON, type InferOutput, type SchemaLike, type StandardJSONSchema } from "./schema.js";

/** ToolCallContext describes one call of a client tool to its handler. */
export interface ToolCallContext {
  /** tool is the name of the tool called. */
  tool: string;
  /** callId identifies the call within the session. */
  callId: string;
  /**
   * idempotencyKey is "<execution_id>/<seq>": stable for this call across
   * retries and replays, so a handler can deduplicate side effects.
   */
  idempotencyKey: string;
  /** deadline is when the execution's timeout expires, if the server sent one. */
  deadline: Date | undefined;
  /**
   * traceparent is the W3C trace context (the `traceparent` header value)
   * of the call's `execute_tool` span on the server: make it the parent of
   * the spans that serve the call (with OpenTelemetry, extract it with the
   * W3C trace context propagator). "" when the server records no span for
   * the call (tracing off, or the trace not sampled).
   */
  traceparent: string;
  /** tracestate is the W3C `tracestate` that goes with traceparent; often "". */
  tracestate: string;
  /**
   * signal aborts when the answer is no longer wanted: the execution
   * ended (result, cancellation, lost connection) or its deadline passed.
   */
  signal: AbortSignal;
}

/** ToolHandler serves one client tool: it gets the parsed arguments and returns a JSON-serialisable result. */
export type ToolHandler<Args = unknown, Out = unknown> = (args: Args, ctx: ToolCallContext) => Out | Promise<Out>;

/**
 * ClientTool is a tool the harness serves: a definition the script sees
 * (`tools.<name>(args)`) and a handler. The server validates every call's
 * arguments against inputSchema before the handler sees them (a call that
 * fails never reaches the handler), and the result against outputSchema.
 */
export interface ClientTool<Args = any, Out = unknown> {
  /** name is how scripts call the tool; dots make namespaces (`crm.find_contact`). */
  name: string;
  /** description tells a model what the tool does. */
  description?: string;
  /** inputSchema is the arguments' JSON Schema or a Standard JSON Schema (Zod) value; absent accepts any JSON. */
  inputSchema?: SchemaLike;
  /** outputSchema is the result's schema; absent means the result is not validated. */
  outputSchema?: SchemaLike;
  /** handler serves a call. Calls run concurrently; answers go back in the order they finish. */
  handler: ToolHandler<Args, Out>;
}

/**
 * ClientToolDefinition is a client tool without its handler, as a
 * resumable `execute` takes it: a call to it pauses the execution, and the
 * caller answers it in `resume`. A ClientTool is one too (its handler is
 * then not used).
 */
export type ClientToolDefinition = Omit<ClientTool, "handler"> & { handler?: ToolHandler<any, unknown> };

/**
 * clientTool returns its argument, typed: with a Zod (Standard JSON
 * Schema) inputSchema the handler's arguments take the schema's output
 * type, and they are parsed by the schema before the handler runs.
 */
export function clientTool<S extends SchemaLike, Out = unknown>(tool: {
  name: string;
  description?: string;
  inputSchema: S;
  outputSchema?: SchemaLike;
  handler: ToolHandler<InferOutput<S>, Out>;
}): ClientTool<InferOutput<S>, Out>;
export function clientTool<Out = unknown>(tool: ClientTool<unknown, Out>): ClientTool<unknown, Out>;
export function clientTool(tool: ClientTool): ClientTool {
  return tool;
}

/** nameRE is ptc's tool name syntax: dot-separated identifiers. */
const nameRE = /^[A-Za-z_$][A-Za-z0-9_$-]*(\.[A-Za-z_$][A-Za-z0-9_$-]*)*$/;

/** maxNameLength bounds a tool name in bytes. */
const maxNameLength = 128;

/** checkToolName throws InvalidRequestError unless name is a valid ptc tool name. */
export function checkToolName(name: unknown, path: string): asserts name is string {
  if (typeof name !== "string" || name === "") throw new InvalidRequestError(path, "a tool needs a name");
  if (Buffer.byteLength(name) > maxNameLength) throw new InvalidRequestError(path, `tool name is longer than ${maxNameLength} bytes`);
  if (!nameRE.test(name)) {
    throw new InvalidRequestError(path, `tool name ${JSON.stringify(name)} is invalid: use dot-separated identifiers (letters, digits, _ and -)`);
  }
  if (name.split(".").some((seg) => seg.startsWith("$"))) {
    throw new InvalidRequestError(path, `tool name ${JSON.stringify(name)} is invalid: segments starting with '$' are reserved`);
  }
}

/** PreparedTool is a checked client tool: its wire definition, handler and argument parser. */
export interface PreparedTool {
  definition: ToolDefinitionPB;
  handler: ToolHandler;
  /** parse validates arguments with a library schema (Zod); undefined for JSON Schemas. */
  parse: StandardJSONSchema["~standard"]["validate"] | undefined;
  /** inputSchemaJson is kept for TypeScript declarations. */
  inputSchemaJson: string;
  outputSchemaJson: string;
  description: string;
}

/**
 * prepareTools checks client tool definitions (names, duplicates,
 * handlers, schemas) and converts them for the wire. Nothing is sent if it
 * throws.
 */
export function prepareTools(tools: readonly ClientToolDefinition[] | undefined, toDefinition: (d: Omit<ToolDefinitionPB, "$typeName" | "$unknown">) => ToolDefinitionPB,
  needHandlers = true): Map<string, PreparedTool> {
  const out = new Map<string, PreparedTool>();
  if (tools === undefined) return out;
  if (!Array.isArray(tools)) throw new InvalidRequestError("tools", "tools must be an array of client tools");
  tools.forEach((t, i) => {
    const path = `tools[${i}]`;
    if (typeof t !== "object" || t === null) throw new InvalidRequestError(path, "a client tool must be an object {name, description, inputSchema, handler}");
    checkToolName(t.name, `${path}.name`);
    if (out.has(t.name)) throw new InvalidRequestError(`${path}.name`, `duplicate tool name ${JSON.stringify(t.name)}: every client tool needs its own name`);
    if (needHandlers && typeof t.handler !== "function") throw new InvalidRequestError(`${path}.handler`, `client tool ${JSON.stringify(t.name)} has no handler function`);
    if (t.description !== undefined && typeof t.description !== "string") throw new InvalidRequestError(`${path}.description`, "description must be a string");
    const input = t.inputSchema === undefined ? "" : schemaJSON(t.inputSchema, `${path}.inputSchema`, "input");
    const output = t.outputSchema === undefined ? "" : schemaJSON(t.outputSchema, `${path}.outputSchema`, "output");
    const description = t.description ?? "";
    out.set(t.name, {
      definition: toDefinition({ name: t.name, description, inputSchemaJson: input, outputSchemaJson: output, requiresApproval: false }),
      handler: (t.handler ?? (() => undefined)) as ToolHandler,
      parse: isStandardJSONSchema(t.inputSchema) ? t.inputSchema["~standard"].validate : undefined,
      inputSchemaJson: input,
      outputSchemaJson: output,
      description,
    });
  });
  return out;
}
