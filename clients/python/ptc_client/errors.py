"""The exceptions the client raises.

Every exception is a PtcError; each class says where the problem is, so
callers branch with ``except``, never on message text:

- InvalidRequestError: the request or a tool definition is invalid; nothing was sent.
- RequestError: the server refused the request (a gRPC status code).
- ContinuationError: resume refused the continuation (malformed, altered,
  expired, used already, ...): a RequestError with a kind.
- ConnectionLostError: the connection ended before the execution's result arrived.
- CancelledError: the caller cancelled the execution.
- ClientClosedError: the call was made after close(); nothing was sent.
- ExecutionError: the script failed (kind SCRIPT_ERROR, TIMEOUT, ...). It is
  Result.error, and raised only by Result.unwrap().
- ToolError: raised by a client tool handler to fail the call with a code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import grpc

from ._status import reason_of

if TYPE_CHECKING:
    from .types import ErrorKind, Result


class PtcError(Exception):
    """PtcError is the base class of every exception this package raises."""


class InvalidRequestError(PtcError):
    """InvalidRequestError reports a request or client tool definition that
    the client refused before sending anything: an invalid schema, a
    duplicate tool name, an input that is not JSON, a missing handler.
    ``path`` names the offending field, e.g.
    ``tools[1].input_schema.properties.city.type``."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"ptc: {path}: {message}")
        self.path = path


class RequestError(PtcError):
    """RequestError is a request-level problem reported by the server or the
    transport as a gRPC status: INVALID_ARGUMENT (a malformed request, an
    unknown tool in allowed_tools, a client tool whose name collides with a
    server tool), RESOURCE_EXHAUSTED (overload; retry later),
    UNAUTHENTICATED, PERMISSION_DENIED, FAILED_PRECONDITION (an unknown WASM
    module digest: send the module), UNIMPLEMENTED, UNAVAILABLE (the server
    cannot be reached)."""

    def __init__(self, code: grpc.StatusCode, details: str, message: str | None = None, reason: str = "") -> None:
        super().__init__(message or f"ptc: {code.name}: {details}")
        self.code = code
        self.code_name = code.name
        self.details = details
        self.reason = reason
        """Names the cause in a stable form to branch on, when the server
        gives one (e.g. "CONTINUATION_EXPIRED", "ANSWERS_INVALID"; see
        docs/durable.md); "" otherwise."""


class ContinuationError(RequestError):
    """ContinuationError is a RequestError for a continuation that resume
    cannot use; ``kind`` says why, and nothing ran:

    - MALFORMED: empty, not base64url, truncated, corrupt (INVALID_ARGUMENT)
    - TAMPERED: altered, or another server's: its signature fails (INVALID_ARGUMENT)
    - UNKNOWN_KEY: signed with a key this server does not hold (INVALID_ARGUMENT)
    - WRONG_TENANT: issued to another tenant (PERMISSION_DENIED)
    - EXPIRED: past its expiry time (FAILED_PRECONDITION)
    - USED: it resumed its execution already, with other answers, or so
      long ago that the outcome is no longer kept (FAILED_PRECONDITION; a
      retry with the same answers gets the outcome while it is kept)
    - STATE_GONE: its paused state is gone from the server's store (FAILED_PRECONDITION)
    - NEEDS_STORE: it refers to a state store this server does not have (FAILED_PRECONDITION)

    A kind this client does not know yet is the server's reason without
    its "CONTINUATION_" prefix."""

    def __init__(self, code: grpc.StatusCode, details: str, reason: str) -> None:
        super().__init__(code, details, reason=reason)
        self.kind = reason.removeprefix("CONTINUATION_")


def request_error(e: Any) -> RequestError:
    """request_error converts a failed call (grpc.RpcError) into a
    RequestError, or a ContinuationError for a refused continuation."""
    code, details, reason = e.code(), e.details() or "", reason_of(e)
    if reason.startswith("CONTINUATION_"):
        return ContinuationError(code, details, reason)
    return RequestError(code, details, reason=reason)


@dataclass(frozen=True)
class StartedToolCall:
    """StartedToolCall is a tool call of the script that the client knows
    had started when the connection was lost (from the server's progress
    events)."""

    seq: int
    """The call's ToolCallRecord.seq."""
    tool: str
    """The tool called."""
    finished: bool = False
    """True when the call's end was reported: its effects happened."""
    outcome: str = ""
    """"ok" or the call's error code when finished; "" otherwise."""


class ConnectionLostError(RequestError):
    """ConnectionLostError means the connection to the server ended after the
    execution was sent and before its result arrived: the server went away
    (crashed, was killed, the network failed) or closed the stream without
    a result. The execution's outcome is unknown — it may have run, tools
    and their side effects included — so do not simply retry it as one
    retries an UNAVAILABLE that never reached the server: ``execution_id``
    names it, ``started_tool_calls`` lists the tool calls known to have
    started (a run's, from the server's progress; always empty for a unary
    execute, which streams nothing), and client tool calls that were being
    served were abandoned (their contexts are cancelled)."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        execution_id: str,
        pending_tool_calls: int,
        started_tool_calls: Sequence[StartedToolCall] = (),
    ) -> None:
        started = sorted(started_tool_calls, key=lambda c: c.seq)
        pending = "1 client tool call was" if pending_tool_calls == 1 else f"{pending_tool_calls} client tool calls were"
        calls = ""
        if started:
            calls = "; tool calls known to have started: " + ", ".join(
                f"#{c.seq} {c.tool}" + (f" (finished: {c.outcome})" if c.finished else "") for c in started
            )
        super().__init__(
            code,
            details,
            f"ptc: the connection to the server was lost before execution {execution_id} ended "
            f"({code.name}: {details}); its outcome is unknown and {pending} still being served{calls}",
        )
        self.execution_id = execution_id
        self.pending_tool_calls = pending_tool_calls
        self.started_tool_calls = started


class CancelledError(PtcError):
    """CancelledError means the caller cancelled the execution (a
    Cancellation). ``reason`` is the cancellation's reason; ``result`` is the
    server's final result (of kind CANCELLED, or whatever the script reached
    first) when it arrived within the cancellation grace period."""

    kind = "CANCELLED"

    def __init__(self, reason: str = "", result: Result | None = None) -> None:
        super().__init__("ptc: the execution was cancelled by the caller" + (f": {reason}" if reason else ""))
        self.reason = reason
        self.result = result


class ClientClosedError(PtcError):
    """ClientClosedError means a call was made after the client's close():
    nothing was sent. Calls started before close() run to completion."""

    def __init__(self) -> None:
        super().__init__(
            "ptc: the client is closed: calls made after close() are refused "
            "(calls started before it run to completion); create a new client"
        )


class ExecutionError(PtcError):
    """ExecutionError is a classified script failure: the ``error`` of a
    Result whose script failed (a normal, successful call)."""

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        *,
        line: int = 0,
        column: int = 0,
        script_stack: str = "",
        tool: str = "",
        limit: int = 0,
        observed: int = 0,
        model_message: str = "",
        execution_id: str = "",
    ) -> None:
        super().__init__(f"ptc: {kind}: {message}")
        self.kind = kind
        self.message = message
        self.line = line
        self.column = column
        self.script_stack = script_stack
        self.tool = tool
        self.limit = limit
        self.observed = observed
        self.model_message = model_message
        self.execution_id = execution_id


class ToolError(PtcError):
    """ToolError is what a client tool handler raises to fail a call with a
    code of its choice: the script's call rejects with ``err.code == code``
    and the trace records it. Any other Exception fails the call with code
    "tool_failed"."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

