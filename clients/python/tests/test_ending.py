"""How a call ends, shared by Client and AsyncClient (ptc_client._ending):
each outcome from what the call saw, without a server."""

from __future__ import annotations

import grpc
import pytest

from ptc_client import CancelledError, Cancellation, ConnectionLostError, RequestError
from ptc_client._ending import execute_lost, session_closed, session_failed, session_result, unary_failed
from ptc_client._lost import StartedCalls
from ptc_client._proto import runner_pb2 as pb


class _RpcError(grpc.RpcError):
    """A failed call as gRPC reports it."""

    def __init__(self, code: grpc.StatusCode, details: str = "boom") -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple:
        return ()


def _cancelled(reason: str) -> Cancellation:
    c = Cancellation()
    c.cancel(reason)
    return c


@pytest.mark.parametrize(
    "cancel, want, message",
    [
        pytest.param(None, RequestError, "UNAVAILABLE", id="no cancellation"),
        pytest.param(Cancellation(), RequestError, "UNAVAILABLE", id="not cancelled"),
        pytest.param(_cancelled("stop"), CancelledError, "stop", id="cancelled"),
    ],
)
def test_unary_failed(cancel, want, message):
    got = unary_failed(_RpcError(grpc.StatusCode.UNAVAILABLE), cancel)
    assert type(got) is want
    assert message in str(got)


@pytest.mark.parametrize(
    "code, reached, lost",
    [
        pytest.param(grpc.StatusCode.UNAVAILABLE, True, True, id="reached then lost"),
        pytest.param(grpc.StatusCode.UNAVAILABLE, False, False, id="never reached"),
        pytest.param(grpc.StatusCode.INVALID_ARGUMENT, True, False, id="refused"),
    ],
)
def test_execute_lost(code, reached, lost):
    got = execute_lost(RequestError(code, "boom"), reached, "ex-1")
    if not lost:
        assert got is None
        return
    assert isinstance(got, ConnectionLostError)
    assert got.code is code and got.execution_id == "ex-1"


def test_session_result():
    r = pb.ExecuteResponse(result_json="42", execution_id="ex-1")
    assert session_result(r, None).value == 42
    with pytest.raises(CancelledError) as exc:
        session_result(r, "stop")
    assert exc.value.result is not None and exc.value.result.value == 42


@pytest.mark.parametrize(
    "cancel_reason, want",
    [
        pytest.param(None, ConnectionLostError, id="closed"),
        pytest.param("stop", CancelledError, id="closed after a cancel"),
    ],
)
def test_session_closed(cancel_reason, want):
    got = session_closed(cancel_reason, "ex-1", 2, StartedCalls())
    assert type(got) is want
    if want is ConnectionLostError:
        assert got.execution_id == "ex-1" and got.pending_tool_calls == 2
        assert "without a result" in str(got)


@pytest.mark.parametrize(
    "code, cancel_reason, heard, want",
    [
        pytest.param(grpc.StatusCode.UNAVAILABLE, None, True, ConnectionLostError, id="lost after an answer"),
        pytest.param(grpc.StatusCode.UNAVAILABLE, None, False, RequestError, id="never answered"),
        pytest.param(grpc.StatusCode.PERMISSION_DENIED, None, True, RequestError, id="refused"),
        pytest.param(grpc.StatusCode.UNAVAILABLE, "stop", True, CancelledError, id="after a cancel"),
    ],
)
def test_session_failed(code, cancel_reason, heard, want):
    got = session_failed(_RpcError(code), cancel_reason, heard, "ex-1", 0, StartedCalls())
    assert type(got) is want
