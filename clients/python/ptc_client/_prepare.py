"""What Client and AsyncClient check and build before a call sends
anything: one copy of it for both, so that the two cannot drift.

execute and run take their execution options as typed keyword parameters
(named as execute_request's); they hand their arguments here as one
mapping, of which each function reads the names it needs."""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

from ._options import check_grace
from ._proto import runner_pb2 as pb
from ._request import execute_request
from .cancel import Cancellation
from .durable import Answer, answers_pb
from .errors import CancelledError, InvalidRequestError
from .tools import PreparedTool, prepare_tools
from .types import Result, result_from_pb

OPTIONS = tuple(name for name in inspect.signature(execute_request).parameters if name != "source")
"""The execution options: execute_request's keyword parameters, which
execute and run take under the same names (run all but resumable)."""


def request_of(args: Mapping[str, Any]) -> pb.ExecuteRequest:
    """request_of checks and converts the source and the execution options
    among args (a public method's arguments)."""
    return execute_request(args["source"], **{name: args[name] for name in OPTIONS if name in args})


def check_not_cancelled(cancel: Cancellation | None) -> None:
    """check_not_cancelled raises CancelledError, before anything is sent,
    when cancel has already been cancelled."""
    if cancel is not None and cancel.cancelled:
        raise CancelledError(cancel.reason or "")


def unary_request(args: Mapping[str, Any]) -> pb.ExecuteRequest:
    """unary_request checks and converts the arguments of execute (tools,
    cancel, resumable and the execution options)."""
    req = request_of(args)
    add_client_tools(req, args["tools"], args["resumable"])
    check_not_cancelled(args["cancel"])
    return req


def session_start(args: Mapping[str, Any]) -> tuple[dict[str, PreparedTool], pb.SessionRequest]:
    """session_start checks the arguments of run and returns its client
    tools and the first message of its Session stream."""
    prepared = prepare_tools(args["tools"])
    on_log, on_progress, progress_values = args["on_log"], args["on_progress"], args["progress_values"]
    if on_log is not None and not callable(on_log):
        raise InvalidRequestError("on_log", "must be callable")
    check_progress(on_progress, progress_values)
    check_run(args["on_approval"])
    check_grace(args["cancel_grace"])
    threads = args["max_handler_threads"]
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise InvalidRequestError("max_handler_threads", "must be a positive integer")
    execute = request_of(args)
    execute.stream_logs = on_log is not None
    # Progress always streams: it tells a lost connection which tool
    # calls had started. on_progress, when set, sees it too.
    execute.stream_progress = True
    execute.progress_values = on_progress is not None and progress_values
    start = pb.SessionRequest(start=pb.SessionStart(execute=execute, client_tools=[t.definition for t in prepared.values()]))
    check_not_cancelled(args["cancel"])
    return prepared, start


def add_client_tools(req: pb.ExecuteRequest, tools: Any, resumable: bool) -> None:
    """add_client_tools declares the client tools of a resumable execute
    (calls to them pause the execution), refusing them otherwise."""
    if tools is not None and resumable is not True:
        raise InvalidRequestError("tools", "client tools need run (a Session stream), or execute with resumable=True (calls to them pause the execution)")
    req.client_tools.extend(t.definition for t in prepare_tools(tools, need_handlers=False).values())


def resume_request(continuation: Any, answers: Sequence[Answer], wasm_module: bytes | None, cancel: Cancellation | None) -> pb.ResumeRequest:
    """resume_request checks and converts the request of resume."""
    if not isinstance(continuation, str) or not continuation:
        raise InvalidRequestError("continuation", "the continuation is empty: pass the continuation of a paused Result")
    if wasm_module is not None and not isinstance(wasm_module, (bytes, bytearray)):
        raise InvalidRequestError("wasm_module", "must be bytes")
    req = pb.ResumeRequest(continuation=continuation, answers=answers_pb(answers), wasm_module=bytes(wasm_module or b""))
    check_not_cancelled(cancel)
    return req


def execution_of(r: pb.ResumeResponse) -> Result:
    """execution_of is the Result of a resume's response."""
    return result_from_pb(r.execution)


def check_progress(on_progress: Any, progress_values: Any) -> None:
    """check_progress refuses a progress callback that cannot be called."""
    if on_progress is not None and not callable(on_progress):
        raise InvalidRequestError("on_progress", "must be callable")
    if not isinstance(progress_values, bool):
        raise InvalidRequestError("progress_values", "must be a bool")


def check_run(on_approval: Any) -> None:
    """check_run refuses an approval callback that cannot be called."""
    if on_approval is not None and not callable(on_approval):
        raise InvalidRequestError("on_approval", "must be callable")
