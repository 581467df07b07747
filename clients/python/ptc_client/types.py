"""The outcome of an execution and the descriptions of tools, converted
from the wire into plain Python values: seconds as floats, bytes as ints,
parsed JSON."""

from __future__ import annotations

import datetime
import enum
import json
from dataclasses import dataclass, field
from typing import Any

from ._limits import Limits, limits_from_pb
from ._proto import runner_pb2 as pb
from .durable import PendingAction, pending_from_pb
from .errors import ExecutionError, PtcError


class ErrorKind(str, enum.Enum):
    """ErrorKind classifies why a script failed, as the proto enum ErrorKind
    without its prefix. A kind this client does not know yet arrives as the
    plain string "KIND_<number>"."""

    SYNTAX_ERROR = "SYNTAX_ERROR"
    SCRIPT_ERROR = "SCRIPT_ERROR"
    TIMEOUT = "TIMEOUT"
    CPU_LIMIT = "CPU_LIMIT"
    MEMORY_LIMIT = "MEMORY_LIMIT"
    TOOL_CALL_LIMIT = "TOOL_CALL_LIMIT"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    RESULT_SCHEMA_VIOLATION = "RESULT_SCHEMA_VIOLATION"
    CANCELLED = "CANCELLED"
    INTERNAL = "INTERNAL"
    PAUSE_LIMIT = "PAUSE_LIMIT"
    RESUME_DIVERGED = "RESUME_DIVERGED"

    def __str__(self) -> str:
        return self.value


def error_kind(kind: int) -> ErrorKind | str:
    """error_kind maps the wire enum to an ErrorKind."""
    try:
        name = pb.ErrorKind.Name(kind)
    except ValueError:
        return f"KIND_{kind}"
    name = name.removeprefix("ERROR_KIND_")
    try:
        return ErrorKind(name)
    except ValueError:
        return f"KIND_{kind}"


@dataclass
class LogEntry:
    """LogEntry is one line of the script's console output."""

    level: str
    """"log", "info", "warn", "error" or "debug"."""
    message: str
    at: float
    """Seconds since the execution started."""


@dataclass
class Stats:
    """Stats measure one execution (durations in seconds)."""

    duration: float = 0
    cpu_time: float = 0
    queue_time: float = 0
    peak_memory_bytes: int = 0
    tool_calls: int = 0
    tool_result_bytes: int = 0
    """JSON bytes the tools delivered into the sandbox."""
    output_bytes: int = 0
    """Size of the result JSON (after truncation, when it was truncated)."""
    log_bytes: int = 0
    result_truncated: bool = False
    """The result was cut to fit the output limits (overflow="truncate")."""
    untruncated_output_bytes: int = 0
    """Size of the result before it was truncated; 0 when it was not."""
    dropped_items: int = 0
    """Array items and object keys truncation removed."""
    cut_strings: int = 0
    """Strings truncation shortened."""


@dataclass
class ToolCallRecord:
    """ToolCallRecord is the audit record of one tool call."""

    seq: int
    tool: str
    arguments_json: str
    ok: bool
    error_code: str
    """The tool's code, or ptc's (invalid_arguments, tool_failed, invalid_output, ...)."""
    error_message: str
    started_after: float
    duration: float
    result_bytes: int
    result_json: str
    """Set only with include_tool_results."""


@dataclass
class Result:
    """Result is the outcome of one execution. A script that failed is a
    Result with ok False and error set, not an exception. A resumable
    execution that paused is a Result with state "REQUIRES_ACTION"
    (requires_action True), ok False, no error, its pending_actions and a
    continuation for resume."""

    execution_id: str
    ok: bool
    """True when the script returned a result (False while paused)."""
    value: Any
    """The parsed result when ok; None otherwise."""
    result_json: str
    """The result as JSON text when ok; "" otherwise."""
    error: ExecutionError | None
    model_message: str
    """What to paste into a model's context: on success the result JSON,
    followed, when it was truncated, by one line saying how; on failure a
    short explanation. See for_model."""
    logs: list[LogEntry] = field(default_factory=list)
    logs_truncated: bool = False
    stats: Stats = field(default_factory=Stats)
    trace: list[ToolCallRecord] = field(default_factory=list)
    effective_limits: Limits = field(default_factory=Limits)
    state: str = "COMPLETED"
    """"REQUIRES_ACTION" when a resumable execution paused, else "COMPLETED"."""
    pending_actions: list[PendingAction] = field(default_factory=list)
    """The calls a paused execution waits for, by seq; resume needs one
    answer for each. A paused result's logs are those written since the
    previous pause; its stats and trace cover the execution so far."""
    continuation: str = ""
    """Resumes a paused execution, once, until continuation_expire_time;
    "" when it ended. Opaque: store it as it is."""
    continuation_expire_time: datetime.datetime | None = None
    """When the continuation expires (UTC)."""

    @property
    def requires_action(self) -> bool:
        """requires_action reports whether a resumable execution paused:
        answer its pending_actions with resume."""
        return self.state == "REQUIRES_ACTION"

    def for_model(self) -> str:
        """for_model returns what a harness pastes into the model's context:
        the result JSON when the script succeeded (with the line saying how
        it was truncated, when it was), else the short explanation of the
        failure (kind, line, what to change)."""
        if self.requires_action:
            waits = ", ".join(f"{'approval of ' if a.approval else ''}tools.{a.tool} ({a.call_id})" for a in self.pending_actions)
            return f"The script is paused, waiting for: {waits}."
        if self.ok:
            return self.model_message or self.result_json
        return self.model_message or (str(self.error) if self.error else "the script failed")

    def unwrap(self) -> Any:
        """unwrap returns the value, or raises the ExecutionError (a
        PtcError for a paused execution)."""
        if self.requires_action:
            raise PtcError(
                f"ptc: execution {self.execution_id} is paused, waiting for {len(self.pending_actions)} action(s): "
                "answer them with resume(result.continuation, answers)"
            )
        if not self.ok:
            raise self.error or ExecutionError(ErrorKind.INTERNAL, "the result has neither a value nor an error")
        return self.value


@dataclass
class ToolDefinition:
    """ToolDefinition describes a server tool."""

    name: str
    description: str
    input_schema: Any
    """The arguments' JSON Schema; None when any JSON is accepted."""
    output_schema: Any
    """The result's JSON Schema; None when not validated."""
    requires_approval: bool = False
    """Every call of the tool waits for the caller's approval."""


@dataclass
class ToolList:
    """ToolList is the answer of list_tools."""

    tools: list[ToolDefinition]
    typescript: str
    """Declarations of ``tools`` and ``input`` (with include_typescript)."""
    prompt: str
    """Tells a model how to write a ptc script."""
    approx_tokens: int
    matches: list[tuple[str, float]]
    """(name, score) for a query, in the order of tools."""


def seconds(d: Any) -> float:
    """seconds converts a protobuf Duration to seconds."""
    return d.seconds + d.nanos / 1e9


def log_from_pb(entry: pb.LogEntry) -> LogEntry:
    """log_from_pb converts one console entry."""
    return LogEntry(level=entry.level, message=entry.message, at=seconds(entry.at))


def result_from_pb(r: pb.ExecuteResponse) -> Result:
    """result_from_pb converts an ExecuteResponse into a Result."""
    err = None
    if r.HasField("error"):
        e = r.error
        err = ExecutionError(
            error_kind(e.kind),
            e.message,
            line=e.line,
            column=e.column,
            script_stack=e.stack,
            tool=e.tool,
            limit=e.limit,
            observed=e.observed,
            model_message=r.model_message,
            execution_id=r.execution_id,
        )
    st, lim = r.stats, r.effective_limits
    paused = r.state == pb.EXECUTION_STATE_REQUIRES_ACTION
    res = Result(
        execution_id=r.execution_id,
        ok=err is None and not paused,
        value=None,
        result_json="",
        error=err,
        model_message=r.model_message,
        logs=[log_from_pb(entry) for entry in r.logs],
        logs_truncated=r.logs_truncated,
        stats=Stats(
            duration=seconds(st.duration),
            cpu_time=seconds(st.cpu_time),
            queue_time=seconds(st.queue_time),
            peak_memory_bytes=st.peak_memory_bytes,
            tool_calls=st.tool_calls,
            tool_result_bytes=st.tool_result_bytes,
            output_bytes=st.output_bytes,
            log_bytes=st.log_bytes,
            result_truncated=st.result_truncated,
            untruncated_output_bytes=st.untruncated_output_bytes,
            dropped_items=st.dropped_items,
            cut_strings=st.cut_strings,
        ),
        trace=[
            ToolCallRecord(
                seq=t.seq,
                tool=t.tool,
                arguments_json=t.arguments_json,
                ok=t.ok,
                error_code=t.error_code,
                error_message=t.error_message,
                started_after=seconds(t.started_after),
                duration=seconds(t.duration),
                result_bytes=t.result_bytes,
                result_json=t.result_json,
            )
            for t in r.trace
        ],
        effective_limits=limits_from_pb(lim),
        state="REQUIRES_ACTION" if paused else "COMPLETED",
        pending_actions=[pending_from_pb(a) for a in r.pending_actions],
        continuation=r.continuation,
        continuation_expire_time=(
            r.continuation_expire_time.ToDatetime().replace(tzinfo=datetime.timezone.utc) if r.HasField("continuation_expire_time") else None
        ),
    )
    if res.ok:
        res.result_json = r.result_json or "null"
        res.value = json.loads(res.result_json)
    return res


def tool_list_from_pb(r: pb.ListToolsResponse) -> ToolList:
    """tool_list_from_pb converts a ListToolsResponse."""
    return ToolList(
        tools=[
            ToolDefinition(
                name=t.name,
                description=t.description,
                input_schema=json.loads(t.input_schema_json) if t.input_schema_json else None,
                output_schema=json.loads(t.output_schema_json) if t.output_schema_json else None,
                requires_approval=t.requires_approval,
            )
            for t in r.tools
        ],
        typescript=r.typescript,
        prompt=r.prompt,
        approx_tokens=r.approx_tokens,
        matches=[(m.name, m.score) for m in r.matches],
    )


@dataclass
class ProgressEvent:
    """ProgressEvent reports one tool call of the script starting or
    finishing, server and client tools alike (refused calls included), in
    the order the server made them. Progress is best effort: when the
    client reads too slowly the server drops events, and the next one
    delivered counts them in dropped."""

    phase: str
    """"STARTED" when the script made the call, "FINISHED" when it returned or failed."""
    seq: int
    """The call's ToolCallRecord.seq."""
    tool: str
    started_after: float
    """Seconds from the start of the execution to the call."""
    duration: float = 0
    """Seconds the call took; set when finished."""
    argument_bytes: int = 0
    result_bytes: int = 0
    """Size of the JSON result; set when finished with outcome "ok"."""
    outcome: str = ""
    """"ok" or the call's error code (as ToolCallRecord.error_code); "" when started."""
    dropped: int = 0
    """Events dropped just before this one because the client read too slowly."""
    arguments_json: str = ""
    """The call's JSON arguments, with progress_values only."""
    result_json: str = ""
    """The call's JSON result, with progress_values only, when finished with outcome "ok"."""
    error_message: str = ""
    """Describes a failed call, with progress_values only."""


def progress_from_pb(p: pb.ToolProgress) -> ProgressEvent:
    """progress_from_pb converts one ToolProgress message."""
    return ProgressEvent(
        phase="FINISHED" if p.phase == pb.ToolProgress.PHASE_FINISHED else "STARTED",
        seq=p.seq,
        tool=p.tool,
        started_after=seconds(p.started_after),
        duration=seconds(p.duration),
        argument_bytes=p.argument_bytes,
        result_bytes=p.result_bytes,
        outcome=p.outcome,
        dropped=p.dropped,
        arguments_json=p.arguments_json,
        result_json=p.result_json,
        error_message=p.error_message,
    )
