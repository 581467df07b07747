"""How a call of either client ends: the Result it returns or the
exception it raises, given what the call saw. Client and AsyncClient wait
differently (threads, asyncio) but end their calls alike, here."""

from __future__ import annotations

from typing import Any

import grpc

from ._lost import StartedCalls
from ._options import LOST_CODES
from ._proto import runner_pb2 as pb
from .cancel import Cancellation
from .errors import CancelledError, ConnectionLostError, RequestError, request_error
from .types import Result, result_from_pb


def unary_failed(e: Any, cancel: Cancellation | None) -> Exception:
    """unary_failed is what a unary call raises when gRPC fails it with e:
    CancelledError when cancel was cancelled, the RequestError otherwise."""
    if cancel is not None and cancel.cancelled:
        return CancelledError(cancel.reason or "")
    return request_error(e)


def execute_lost(e: RequestError, reached: bool, execution_id: str) -> ConnectionLostError | None:
    """execute_lost is the ConnectionLostError execute raises for e, None
    when e stands: a unary call streams nothing back, so once the request
    could have reached the server (reached) a dropped connection leaves the
    outcome unknown."""
    if type(e) is RequestError and e.code in LOST_CODES and reached:
        return ConnectionLostError(e.code, e.details, execution_id, 0)
    return None


def session_result(r: pb.ExecuteResponse, cancel_reason: str | None) -> Result:
    """session_result is the Result of a Session's result message; if the
    caller had cancelled, it raises CancelledError carrying it."""
    res = result_from_pb(r)
    if cancel_reason is not None:
        raise CancelledError(cancel_reason, res)
    return res


def session_closed(cancel_reason: str | None, execution_id: str, inflight: int, started: StartedCalls) -> Exception:
    """session_closed is what run raises when the server ends the stream
    without a result."""
    if cancel_reason is not None:
        return CancelledError(cancel_reason)
    return ConnectionLostError(grpc.StatusCode.UNAVAILABLE, "the server closed the session without a result", execution_id, inflight, started.calls())


def session_failed(e: Any, cancel_reason: str | None, heard: bool, execution_id: str, inflight: int, started: StartedCalls) -> Exception:
    """session_failed is what run raises when gRPC fails the stream with e:
    CancelledError after a cancel; ConnectionLostError when the server
    had answered anything (heard) and the connection then failed; the
    RequestError otherwise."""
    if cancel_reason is not None:
        return CancelledError(cancel_reason)
    code, details = e.code(), e.details() or ""
    if heard and code in LOST_CODES:
        return ConnectionLostError(code, details, execution_id, inflight, started.calls())
    return request_error(e)
