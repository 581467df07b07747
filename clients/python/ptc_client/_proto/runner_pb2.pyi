from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ACTION_KIND_APPROVAL: ActionKind
ACTION_KIND_CLIENT_TOOL: ActionKind
ACTION_KIND_UNSPECIFIED: ActionKind
DESCRIPTOR: _descriptor.FileDescriptor
ERROR_KIND_CANCELLED: ErrorKind
ERROR_KIND_CPU_LIMIT: ErrorKind
ERROR_KIND_INTERNAL: ErrorKind
ERROR_KIND_MEMORY_LIMIT: ErrorKind
ERROR_KIND_OUTPUT_LIMIT: ErrorKind
ERROR_KIND_PAUSE_LIMIT: ErrorKind
ERROR_KIND_RESULT_SCHEMA_VIOLATION: ErrorKind
ERROR_KIND_RESUME_DIVERGED: ErrorKind
ERROR_KIND_SCRIPT_ERROR: ErrorKind
ERROR_KIND_SYNTAX_ERROR: ErrorKind
ERROR_KIND_TIMEOUT: ErrorKind
ERROR_KIND_TOOL_CALL_LIMIT: ErrorKind
ERROR_KIND_UNSPECIFIED: ErrorKind
EXECUTION_STATE_COMPLETED: ExecutionState
EXECUTION_STATE_REQUIRES_ACTION: ExecutionState
EXECUTION_STATE_UNSPECIFIED: ExecutionState
LANGUAGE_JAVASCRIPT: Language
LANGUAGE_PYTHON: Language
LANGUAGE_TYPESCRIPT: Language
LANGUAGE_UNSPECIFIED: Language
LANGUAGE_WASM: Language
OVERFLOW_POLICY_FAIL: OverflowPolicy
OVERFLOW_POLICY_TRUNCATE: OverflowPolicy
OVERFLOW_POLICY_UNSPECIFIED: OverflowPolicy

class ActionAnswer(_message.Message):
    __slots__ = ["approval", "call_id", "error", "output_json"]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    call_id: str
    error: ToolError
    output_json: str
    def __init__(self, call_id: _Optional[str] = ..., output_json: _Optional[str] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., approval: _Optional[_Union[Approval, _Mapping]] = ...) -> None: ...

class Approval(_message.Message):
    __slots__ = ["approved", "reason"]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    approved: bool
    reason: str
    def __init__(self, approved: bool = ..., reason: _Optional[str] = ...) -> None: ...

class ApprovalRequest(_message.Message):
    __slots__ = ["action", "deadline"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    action: PendingAction
    deadline: _timestamp_pb2.Timestamp
    def __init__(self, action: _Optional[_Union[PendingAction, _Mapping]] = ..., deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CancelExecution(_message.Message):
    __slots__ = ["reason"]
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ["allowed_tools", "client_tools", "clock_start", "deterministic", "execution_id", "include_tool_results", "input_json", "limits", "no_server_tools", "overflow_policy", "progress_values", "require_approval", "result_schema_json", "resumable", "script", "seed", "stream_logs", "stream_progress"]
    ALLOWED_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_TOOLS_FIELD_NUMBER: _ClassVar[int]
    CLOCK_START_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TOOL_RESULTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    NO_SERVER_TOOLS_FIELD_NUMBER: _ClassVar[int]
    OVERFLOW_POLICY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_VALUES_FIELD_NUMBER: _ClassVar[int]
    REQUIRE_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    RESULT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    RESUMABLE_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STREAM_LOGS_FIELD_NUMBER: _ClassVar[int]
    STREAM_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    allowed_tools: _containers.RepeatedScalarFieldContainer[str]
    client_tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    clock_start: _timestamp_pb2.Timestamp
    deterministic: bool
    execution_id: str
    include_tool_results: bool
    input_json: str
    limits: Limits
    no_server_tools: bool
    overflow_policy: OverflowPolicy
    progress_values: bool
    require_approval: _containers.RepeatedScalarFieldContainer[str]
    result_schema_json: str
    resumable: bool
    script: Script
    seed: int
    stream_logs: bool
    stream_progress: bool
    def __init__(self, script: _Optional[_Union[Script, _Mapping]] = ..., input_json: _Optional[str] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., allowed_tools: _Optional[_Iterable[str]] = ..., result_schema_json: _Optional[str] = ..., execution_id: _Optional[str] = ..., deterministic: bool = ..., seed: _Optional[int] = ..., clock_start: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., include_tool_results: bool = ..., stream_logs: bool = ..., stream_progress: bool = ..., progress_values: bool = ..., overflow_policy: _Optional[_Union[OverflowPolicy, str]] = ..., resumable: bool = ..., client_tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., require_approval: _Optional[_Iterable[str]] = ..., no_server_tools: bool = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ["continuation", "continuation_expire_time", "effective_limits", "error", "execution_id", "logs", "logs_truncated", "model_message", "pending_actions", "result_json", "state", "stats", "trace"]
    CONTINUATION_EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_LIMITS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    LOGS_FIELD_NUMBER: _ClassVar[int]
    LOGS_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PENDING_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    continuation: str
    continuation_expire_time: _timestamp_pb2.Timestamp
    effective_limits: Limits
    error: ExecutionError
    execution_id: str
    logs: _containers.RepeatedCompositeFieldContainer[LogEntry]
    logs_truncated: bool
    model_message: str
    pending_actions: _containers.RepeatedCompositeFieldContainer[PendingAction]
    result_json: str
    state: ExecutionState
    stats: ExecutionStats
    trace: _containers.RepeatedCompositeFieldContainer[ToolCallRecord]
    def __init__(self, execution_id: _Optional[str] = ..., result_json: _Optional[str] = ..., error: _Optional[_Union[ExecutionError, _Mapping]] = ..., model_message: _Optional[str] = ..., logs: _Optional[_Iterable[_Union[LogEntry, _Mapping]]] = ..., logs_truncated: bool = ..., stats: _Optional[_Union[ExecutionStats, _Mapping]] = ..., trace: _Optional[_Iterable[_Union[ToolCallRecord, _Mapping]]] = ..., effective_limits: _Optional[_Union[Limits, _Mapping]] = ..., state: _Optional[_Union[ExecutionState, str]] = ..., pending_actions: _Optional[_Iterable[_Union[PendingAction, _Mapping]]] = ..., continuation: _Optional[str] = ..., continuation_expire_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExecutionError(_message.Message):
    __slots__ = ["column", "kind", "limit", "line", "message", "observed", "stack", "tool"]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_FIELD_NUMBER: _ClassVar[int]
    STACK_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    column: int
    kind: ErrorKind
    limit: int
    line: int
    message: str
    observed: int
    stack: str
    tool: str
    def __init__(self, kind: _Optional[_Union[ErrorKind, str]] = ..., message: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., stack: _Optional[str] = ..., tool: _Optional[str] = ..., limit: _Optional[int] = ..., observed: _Optional[int] = ...) -> None: ...

class ExecutionStats(_message.Message):
    __slots__ = ["cpu_time", "cut_strings", "dropped_items", "duration", "log_bytes", "output_bytes", "peak_memory_bytes", "queue_time", "result_truncated", "tool_calls", "tool_result_bytes", "untruncated_output_bytes"]
    CPU_TIME_FIELD_NUMBER: _ClassVar[int]
    CUT_STRINGS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_ITEMS_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    LOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    PEAK_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TIME_FIELD_NUMBER: _ClassVar[int]
    RESULT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    UNTRUNCATED_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    cpu_time: _duration_pb2.Duration
    cut_strings: int
    dropped_items: int
    duration: _duration_pb2.Duration
    log_bytes: int
    output_bytes: int
    peak_memory_bytes: int
    queue_time: _duration_pb2.Duration
    result_truncated: bool
    tool_calls: int
    tool_result_bytes: int
    untruncated_output_bytes: int
    def __init__(self, duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., cpu_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., peak_memory_bytes: _Optional[int] = ..., tool_calls: _Optional[int] = ..., tool_result_bytes: _Optional[int] = ..., output_bytes: _Optional[int] = ..., queue_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., log_bytes: _Optional[int] = ..., result_truncated: bool = ..., untruncated_output_bytes: _Optional[int] = ..., dropped_items: _Optional[int] = ..., cut_strings: _Optional[int] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ["cpu_time", "max_concurrent_tool_calls", "max_log_bytes", "max_log_entries", "max_output_bytes", "max_paused_time", "max_pauses", "max_result_tokens", "max_tool_calls", "memory_bytes", "timeout"]
    CPU_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MAX_LOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_LOG_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_PAUSED_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_PAUSES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    cpu_time: _duration_pb2.Duration
    max_concurrent_tool_calls: int
    max_log_bytes: int
    max_log_entries: int
    max_output_bytes: int
    max_paused_time: _duration_pb2.Duration
    max_pauses: int
    max_result_tokens: int
    max_tool_calls: int
    memory_bytes: int
    timeout: _duration_pb2.Duration
    def __init__(self, timeout: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., cpu_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., memory_bytes: _Optional[int] = ..., max_tool_calls: _Optional[int] = ..., max_concurrent_tool_calls: _Optional[int] = ..., max_output_bytes: _Optional[int] = ..., max_log_bytes: _Optional[int] = ..., max_log_entries: _Optional[int] = ..., max_result_tokens: _Optional[int] = ..., max_pauses: _Optional[int] = ..., max_paused_time: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ["include_typescript", "language", "limit", "names", "query"]
    INCLUDE_TYPESCRIPT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    include_typescript: bool
    language: Language
    limit: int
    names: _containers.RepeatedScalarFieldContainer[str]
    query: str
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ..., names: _Optional[_Iterable[str]] = ..., include_typescript: bool = ..., language: _Optional[_Union[Language, str]] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ["approx_tokens", "matches", "prompt", "tools", "typescript"]
    APPROX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TYPESCRIPT_FIELD_NUMBER: _ClassVar[int]
    approx_tokens: int
    matches: _containers.RepeatedCompositeFieldContainer[ToolMatch]
    prompt: str
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    typescript: str
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ..., typescript: _Optional[str] = ..., prompt: _Optional[str] = ..., approx_tokens: _Optional[int] = ..., matches: _Optional[_Iterable[_Union[ToolMatch, _Mapping]]] = ...) -> None: ...

class LogEntry(_message.Message):
    __slots__ = ["at", "level", "message"]
    AT_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    at: _duration_pb2.Duration
    level: str
    message: str
    def __init__(self, level: _Optional[str] = ..., message: _Optional[str] = ..., at: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class PendingAction(_message.Message):
    __slots__ = ["arguments_json", "call_id", "idempotency_key", "kind", "reason", "seq", "tool", "traceparent", "tracestate"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    call_id: str
    idempotency_key: str
    kind: ActionKind
    reason: str
    seq: int
    tool: str
    traceparent: str
    tracestate: str
    def __init__(self, call_id: _Optional[str] = ..., kind: _Optional[_Union[ActionKind, str]] = ..., seq: _Optional[int] = ..., tool: _Optional[str] = ..., arguments_json: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., reason: _Optional[str] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class ProtocolError(_message.Message):
    __slots__ = ["call_id", "message"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    message: str
    def __init__(self, call_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ["answers", "continuation", "wasm_module"]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    WASM_MODULE_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[ActionAnswer]
    continuation: str
    wasm_module: bytes
    def __init__(self, continuation: _Optional[str] = ..., answers: _Optional[_Iterable[_Union[ActionAnswer, _Mapping]]] = ..., wasm_module: _Optional[bytes] = ...) -> None: ...

class ResumeResponse(_message.Message):
    __slots__ = ["execution"]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    execution: ExecuteResponse
    def __init__(self, execution: _Optional[_Union[ExecuteResponse, _Mapping]] = ...) -> None: ...

class Script(_message.Message):
    __slots__ = ["language", "module_sha256", "source", "wasm_module"]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    MODULE_SHA256_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    WASM_MODULE_FIELD_NUMBER: _ClassVar[int]
    language: Language
    module_sha256: str
    source: str
    wasm_module: bytes
    def __init__(self, language: _Optional[_Union[Language, str]] = ..., source: _Optional[str] = ..., wasm_module: _Optional[bytes] = ..., module_sha256: _Optional[str] = ...) -> None: ...

class SessionRequest(_message.Message):
    __slots__ = ["approval_answer", "cancel", "start", "tool_result"]
    APPROVAL_ANSWER_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    approval_answer: ActionAnswer
    cancel: CancelExecution
    start: SessionStart
    tool_result: ToolResult
    def __init__(self, start: _Optional[_Union[SessionStart, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., cancel: _Optional[_Union[CancelExecution, _Mapping]] = ..., approval_answer: _Optional[_Union[ActionAnswer, _Mapping]] = ...) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ["approval_request", "log", "progress", "protocol_error", "result", "tool_call"]
    APPROVAL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    approval_request: ApprovalRequest
    log: LogEntry
    progress: ToolProgress
    protocol_error: ProtocolError
    result: ExecuteResponse
    tool_call: ToolCall
    def __init__(self, tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., log: _Optional[_Union[LogEntry, _Mapping]] = ..., result: _Optional[_Union[ExecuteResponse, _Mapping]] = ..., protocol_error: _Optional[_Union[ProtocolError, _Mapping]] = ..., progress: _Optional[_Union[ToolProgress, _Mapping]] = ..., approval_request: _Optional[_Union[ApprovalRequest, _Mapping]] = ...) -> None: ...

class SessionStart(_message.Message):
    __slots__ = ["client_tools", "execute"]
    CLIENT_TOOLS_FIELD_NUMBER: _ClassVar[int]
    EXECUTE_FIELD_NUMBER: _ClassVar[int]
    client_tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    execute: ExecuteRequest
    def __init__(self, execute: _Optional[_Union[ExecuteRequest, _Mapping]] = ..., client_tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ["arguments_json", "call_id", "deadline", "idempotency_key", "tool", "traceparent", "tracestate"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    call_id: str
    deadline: _timestamp_pb2.Timestamp
    idempotency_key: str
    tool: str
    traceparent: str
    tracestate: str
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments_json: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., deadline: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class ToolCallRecord(_message.Message):
    __slots__ = ["arguments_json", "duration", "error_code", "error_message", "ok", "result_bytes", "result_json", "seq", "started_after", "tool"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STARTED_AFTER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    duration: _duration_pb2.Duration
    error_code: str
    error_message: str
    ok: bool
    result_bytes: int
    result_json: str
    seq: int
    started_after: _duration_pb2.Duration
    tool: str
    def __init__(self, seq: _Optional[int] = ..., tool: _Optional[str] = ..., arguments_json: _Optional[str] = ..., ok: bool = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., started_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., result_bytes: _Optional[int] = ..., result_json: _Optional[str] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ["description", "input_schema_json", "name", "output_schema_json", "requires_approval"]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    description: str
    input_schema_json: str
    name: str
    output_schema_json: str
    requires_approval: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., output_schema_json: _Optional[str] = ..., requires_approval: bool = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ["code", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ToolMatch(_message.Message):
    __slots__ = ["name", "score"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    score: float
    def __init__(self, name: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class ToolProgress(_message.Message):
    __slots__ = ["argument_bytes", "arguments_json", "dropped", "duration", "error_message", "outcome", "phase", "result_bytes", "result_json", "seq", "started_after", "tool"]
    class Phase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_BYTES_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PHASE_FINISHED: ToolProgress.Phase
    PHASE_STARTED: ToolProgress.Phase
    PHASE_UNSPECIFIED: ToolProgress.Phase
    RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STARTED_AFTER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    argument_bytes: int
    arguments_json: str
    dropped: int
    duration: _duration_pb2.Duration
    error_message: str
    outcome: str
    phase: ToolProgress.Phase
    result_bytes: int
    result_json: str
    seq: int
    started_after: _duration_pb2.Duration
    tool: str
    def __init__(self, phase: _Optional[_Union[ToolProgress.Phase, str]] = ..., seq: _Optional[int] = ..., tool: _Optional[str] = ..., started_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., duration: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., argument_bytes: _Optional[int] = ..., result_bytes: _Optional[int] = ..., outcome: _Optional[str] = ..., dropped: _Optional[int] = ..., arguments_json: _Optional[str] = ..., result_json: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ["call_id", "error", "output_json"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    error: ToolError
    output_json: str
    def __init__(self, call_id: _Optional[str] = ..., output_json: _Optional[str] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ...) -> None: ...

class Language(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ErrorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ExecutionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ActionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OverflowPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
