"""Durable executions on the client side: the calls a paused execution
waits for, the answers that resume it (checked before anything is sent),
and the decisions of approval callbacks. See docs/durable.md."""

from __future__ import annotations

import asyncio
import datetime
import inspect
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence, Union

from ._json import NotJSONError, dumps_strict
from ._proto import runner_pb2 as pb
from .errors import InvalidRequestError

MAX_REASON_BYTES = 4096
"""The longest denial reason the server takes (UTF-8 bytes)."""


@dataclass
class PendingAction:
    """PendingAction is one call a paused execution waits for
    (Result.pending_actions), or one an approval callback decides."""

    call_id: str
    """Names the call in its Answer."""
    kind: str
    """"CLIENT_TOOL" (answer with an output or an error) or "APPROVAL" (approve or deny)."""
    seq: int
    """The call's 1-based number among the execution's calls."""
    tool: str
    """The tool called: a client tool, or the server tool that runs if approved."""
    arguments: Any
    """The call's arguments, parsed; the server validated them against the tool's input schema."""
    arguments_json: str
    idempotency_key: str
    """"<execution_id>/<seq>", the same on every resume: deduplicate side effects with it."""
    reason: str = ""
    """Why a call needs approval; "" for a client tool call."""
    traceparent: str = ""
    """The W3C trace context of the call's execute_tool span on the server
    (started when the script made the call; a resume that re-runs the
    execution ends it at the pause), to parent the spans that serve or
    decide the call. "" when the server records no span for it."""
    tracestate: str = ""
    """The W3C tracestate that goes with traceparent; often ""."""

    @property
    def approval(self) -> bool:
        """approval is True when the call waits for approval of a server tool."""
        return self.kind == "APPROVAL"


def pending_from_pb(a: pb.PendingAction) -> PendingAction:
    """pending_from_pb converts one pending action."""
    try:
        args = json.loads(a.arguments_json) if a.arguments_json else None
    except ValueError:
        args = None  # the server validated it; arguments_json keeps what it sent
    return PendingAction(
        call_id=a.call_id,
        kind="APPROVAL" if a.kind == pb.ACTION_KIND_APPROVAL else "CLIENT_TOOL",
        seq=a.seq,
        tool=a.tool,
        arguments=args,
        arguments_json=a.arguments_json,
        idempotency_key=a.idempotency_key,
        reason=a.reason,
        traceparent=a.traceparent,
        tracestate=a.tracestate,
    )


_UNSET: Any = object()


@dataclass
class Answer:
    """Answer answers one pending action in resume: for a client tool call
    exactly one of ``output`` (any JSON value, checked against the tool's
    output schema by the server) and ``error`` (a (code, message) pair: the
    script's call rejects with a ToolError of that code); for an approval
    ``approve=True``, or ``deny=True`` with a ``reason`` the script sees as
    the message of a ToolError with code "denied". The class methods build
    them from a PendingAction or a call id."""

    call_id: str
    output: Any = _UNSET
    error: tuple[str, str] | None = None
    approve: bool = False
    deny: bool = False
    reason: str = ""

    @classmethod
    def with_output(cls, action: PendingAction | str, value: Any) -> Answer:
        """with_output answers a client tool call with its result."""
        return cls(_id(action), output=value)

    @classmethod
    def with_error(cls, action: PendingAction | str, code: str, message: str = "") -> Answer:
        """with_error fails a client tool call with a ToolError of this code."""
        return cls(_id(action), error=(code, message))

    @classmethod
    def approved(cls, action: PendingAction | str) -> Answer:
        """approved lets a server tool call run (once, with its idempotency key)."""
        return cls(_id(action), approve=True)

    @classmethod
    def denied(cls, action: PendingAction | str, reason: str = "") -> Answer:
        """denied refuses a server tool call: the script's call rejects with
        code "denied" and this reason."""
        return cls(_id(action), deny=True, reason=reason)

    def __repr__(self) -> str:
        what = (
            f"output={self.output!r}" if self.output is not _UNSET
            else f"error={self.error!r}" if self.error is not None
            else "approve=True" if self.approve
            else f"deny=True, reason={self.reason!r}" if self.deny
            else "(no outcome)"
        )
        return f"Answer({self.call_id!r}, {what})"


def _id(action: PendingAction | str) -> str:
    return action.call_id if isinstance(action, PendingAction) else action


def answers_pb(answers: Sequence[Answer]) -> list[pb.ActionAnswer]:
    """answers_pb checks answers and converts them for the wire; nothing is
    sent if it raises."""
    if isinstance(answers, (str, bytes, dict, Answer)) or not hasattr(answers, "__iter__"):
        raise InvalidRequestError("answers", "answers must be a list of Answer (one per pending action)")
    out: list[pb.ActionAnswer] = []
    seen: set[str] = set()
    for i, a in enumerate(answers):
        path = f"answers[{i}]"
        if not isinstance(a, Answer):
            raise InvalidRequestError(path, f"an answer must be an Answer, not {type(a).__name__}")
        if not isinstance(a.call_id, str) or not a.call_id:
            raise InvalidRequestError(f"{path}.call_id", "an answer needs the call_id of a pending action")
        if a.call_id in seen:
            raise InvalidRequestError(f"{path}.call_id", f"call {a.call_id!r} is answered twice")
        seen.add(a.call_id)
        # Default-deny: approve and deny are read only as booleans; any
        # other value ("true", 1) is refused, not guessed at.
        for k in ("approve", "deny"):
            if not isinstance(getattr(a, k), bool):
                raise InvalidRequestError(f"{path}.{k}", "must be a bool (True to give this outcome)")
        given = [k for k, set_ in (("output", a.output is not _UNSET), ("error", a.error is not None), ("approve", a.approve is True), ("deny", a.deny is True)) if set_]
        if len(given) != 1:
            raise InvalidRequestError(path, f"give exactly one of output, error, approve and deny (got {' and '.join(given) or 'none'})")
        if not isinstance(a.reason, str):
            raise InvalidRequestError(f"{path}.reason", "must be a string")
        if len(a.reason.encode()) > MAX_REASON_BYTES:
            raise InvalidRequestError(f"{path}.reason", f"is longer than {MAX_REASON_BYTES} bytes")
        m = pb.ActionAnswer(call_id=a.call_id)
        if given[0] == "output":
            try:
                m.output_json = dumps_strict(a.output)
            except NotJSONError as e:
                raise InvalidRequestError(f"{path}.output", f"the output is not JSON: {e}") from e
        elif given[0] == "error":
            err = a.error
            if not isinstance(err, tuple) or len(err) != 2 or not isinstance(err[0], str) or not err[0] or not isinstance(err[1], str):
                raise InvalidRequestError(f"{path}.error", 'a client tool error is a (code, message) pair with a code, e.g. ("not_found", "...")')
            m.error.CopyFrom(pb.ToolError(code=err[0], message=err[1]))
        else:
            m.approval.CopyFrom(pb.Approval(approved=given[0] == "approve", reason=a.reason))
        out.append(m)
    return out


@dataclass
class ApprovalContext:
    """ApprovalContext describes one approval request to its callback."""

    deadline: datetime.datetime | None
    """When the execution's timeout expires, if the server sent one (UTC)."""
    ended: threading.Event = field(repr=False)
    """Set when the decision is no longer wanted (the execution ended)."""


ApprovalDecision = Union[bool, tuple[bool, str]]
"""What an approval callback returns: True approves, False denies; a
(approved, reason) pair gives the denial's reason (which the script sees
as the message of a ToolError with code "denied")."""

ApprovalCallback = Callable[..., Union[ApprovalDecision, Awaitable[ApprovalDecision]]]
"""on_approval(action) or on_approval(action, ctx), sync or async."""

NO_CALLBACK = "this client has no approval callback (on_approval)"


def approval_context(r: pb.ApprovalRequest, ended: threading.Event) -> ApprovalContext:
    """approval_context is the context of one approval request."""
    deadline = r.deadline.ToDatetime().replace(tzinfo=datetime.timezone.utc) if r.HasField("deadline") else None
    return ApprovalContext(deadline=deadline, ended=ended)


def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _normalise(d: Any) -> tuple[bool, str]:
    """_normalise reads a callback's decision: only True, or a pair
    (True, str), approves; any other value (a truthy "yes" or 1, a list, a
    pair whose first item is not a bool or whose reason is not a str)
    denies."""
    if isinstance(d, bool):
        return d, ""
    if isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], bool) and isinstance(d[1], str):
        return d[0], _cut(d[1])
    return False, "the approval callback returned neither a bool nor an (approved, reason) pair"


def _failed(e: BaseException) -> tuple[bool, str]:
    return False, _cut(f"the approval callback failed: {str(e) or type(e).__name__}")


def decide_sync(cb: ApprovalCallback | None, action: PendingAction, ctx: ApprovalContext) -> tuple[bool, str]:
    """decide_sync runs a callback on this thread (an async one on an event
    loop of its own) and normalises its decision. It never raises: no
    callback, one that raises, or a decision of the wrong shape denies the
    call (fail closed), saying why."""
    if cb is None:
        return False, NO_CALLBACK
    try:
        d = cb(action, ctx) if _takes_context(cb) else cb(action)
        if inspect.isawaitable(d):
            d = asyncio.run(_awaited(d))
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 - a failing callback denies
        return _failed(e)
    return _normalise(d)


async def decide_async(cb: ApprovalCallback | None, action: PendingAction, ctx: ApprovalContext, executor: Any) -> tuple[bool, str]:
    """decide_async is decide_sync for asyncio: a coroutine callback is
    awaited, a plain one runs on a thread of executor."""
    if cb is None:
        return False, NO_CALLBACK
    args = (action, ctx) if _takes_context(cb) else (action,)
    try:
        if asyncio.iscoroutinefunction(cb):
            d = await cb(*args)
        else:
            d = await asyncio.get_running_loop().run_in_executor(executor, cb, *args)
            if inspect.isawaitable(d):
                d = await d
    except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - a failing callback denies
        return _failed(e)
    return _normalise(d)


def approval_answer(action: PendingAction, decision: tuple[bool, str]) -> pb.SessionRequest:
    """approval_answer is the Session message that answers one approval request."""
    return pb.SessionRequest(
        approval_answer=pb.ActionAnswer(call_id=action.call_id, approval=pb.Approval(approved=decision[0], reason=decision[1]))
    )


async def _awaited(a: Any) -> Any:
    return await a


def _cut(s: str) -> str:
    """_cut shortens s to at most MAX_REASON_BYTES of UTF-8, on a character boundary."""
    b = s.encode()
    if len(b) <= MAX_REASON_BYTES:
        return s
    return b[: MAX_REASON_BYTES - 3].decode(errors="ignore") + "…"
