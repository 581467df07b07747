// @ptcrun/client: the TypeScript client of ptc, a sandboxed runner for
// programmatic tool calling. See docs/clients.md in the ptc repository.
//
// Adapters live in subpath exports so that their SDKs stay optional:
//   @ptcrun/client/ai             a Vercel AI SDK tool
//   @ptcrun/client/openai-agents  an OpenAI Agents SDK function tool

export {
  Client,
  type ClientOptions,
  type ExecuteRequestOptions,
  type ListToolsOptions,
  type ResumeOptions,
  type RunOptions,
  type ToolDefinition,
  type ToolList,
} from "./client.js";
export {
  Answer,
  type ApprovalCallback,
  type ApprovalContext,
  type ApprovalDecision,
  type PendingAction,
  type PendingActionKind,
} from "./durable.js";
export {
  CancelledError,
  ClientClosedError,
  ConnectionLostError,
  ContinuationError,
  InvalidRequestError,
  PtcError,
  RequestError,
  ToolError,
  grpcCodeName,
  type ContinuationErrorKind,
  type StartedToolCall,
} from "./errors.js";
export { NotJSONError, toJSONStrict } from "./json.js";
export { type Limits } from "./limits.js";
export { type ProgressEvent } from "./progress.js";
export { newExecutionId, type ExecuteOptions, type Language, type Overflow } from "./request.js";
export {
  ExecutionError,
  forModel,
  requiresAction,
  unwrap,
  type CompletedResult,
  type ErrorKind,
  type ExecutionStateName,
  type FailedResult,
  type PausedResult,
  type ResultBase,
  type LogEntry,
  type Result,
  type Stats,
  type SucceededResult,
  type ToolCallRecord,
} from "./result.js";
export { type InferOutput, type JSONSchema, type SchemaLike, type StandardJSONSchema } from "./schema.js";
export { clientTool, type ClientTool, type ClientToolDefinition, type ToolCallContext, type ToolHandler } from "./tools.js";
