"""Client: the synchronous client. One Client holds one gRPC channel to a
ptcd server and is safe to share between threads."""

from __future__ import annotations

import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator

import grpc

from ._options import DEFAULT_CANCEL_GRACE, LOST_CODES, ChannelOptions, call_metadata, channel_options, check_grace, check_target
from ._proto import runner_pb2 as pb
from ._proto import runner_pb2_grpc as pb_grpc
from ._request import execute_request
from ._serve import serve_sync
from .cancel import Cancellation
from .errors import CancelledError, ConnectionLostError, InvalidRequestError, RequestError
from .tools import ClientTool, PreparedTool, prepare_tools
from .types import LogEntry, Result, ToolList, log_from_pb, result_from_pb, tool_list_from_pb

_CLOSE = object()  # ends the request stream


class Client:
    """Client talks to a ptcd server: ``execute`` runs a script against the
    server's tools, ``run`` also serves client tools from this process, and
    ``list_tools`` describes the server's tools for a model. Request
    problems raise RequestError (a gRPC code) or InvalidRequestError (found
    before sending); a script that fails returns a Result with ok False and
    a classified error.

    Execution options (keyword arguments of execute and run):
    language ("javascript", "typescript", "wasm"), wasm_module,
    module_sha256, input (a JSON value), limits (Limits or dict),
    allowed_tools, result_schema (a JSON Schema), execution_id (made up
    when absent, so it is known even if the connection fails),
    deterministic, seed, clock_start, include_tool_results.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        metadata: dict[str, str] | None = None,
        options: ChannelOptions | None = None,
    ) -> None:
        """Connect to the server at target, e.g. "127.0.0.1:7878". Without
        credentials the channel is plaintext; token is sent as
        "authorization: Bearer <token>". options are gRPC channel options;
        messages up to 64 MiB (ptcd's largest response) are accepted unless
        they set grpc.max_receive_message_length."""
        check_target(target)
        opts = channel_options(options)
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=opts)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=opts)
        self._stub = pb_grpc.RunnerServiceStub(self._channel)
        self._metadata = call_metadata(token, metadata)

    def close(self) -> None:
        """close closes the channel; calls in flight fail."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list_tools(
        self,
        *,
        query: str = "",
        limit: int = 0,
        names: Iterable[str] | None = None,
        include_typescript: bool = False,
        timeout: float | None = None,
    ) -> ToolList:
        """list_tools describes the server's tools, ranked by query when
        given, with TypeScript declarations when include_typescript."""
        req = pb.ListToolsRequest(query=query, limit=limit, names=list(names or []), include_typescript=include_typescript)
        try:
            return tool_list_from_pb(self._stub.ListTools(req, metadata=self._metadata, timeout=timeout))
        except grpc.RpcError as e:
            raise RequestError(e.code(), e.details() or "") from e

    def execute(self, source: str | None = None, *, cancel: Cancellation | None = None, **options: Any) -> Result:
        """execute runs a script against the server's tools in one unary
        call. Client tools need run. cancel cancels the call (raising
        CancelledError)."""
        if "tools" in options or "on_log" in options:
            raise InvalidRequestError("tools", "client tools and on_log need run (a Session stream), not execute")
        req = execute_request(source, **options)
        if cancel is not None and cancel.cancelled:
            raise CancelledError(cancel.reason or "")
        future = self._stub.Execute.future(req, metadata=self._metadata)
        unsubscribe = cancel._subscribe(lambda _: future.cancel()) if cancel is not None else None
        try:
            return result_from_pb(future.result())
        except grpc.FutureCancelledError:
            raise CancelledError(cancel.reason or "" if cancel is not None else "") from None
        except grpc.RpcError as e:
            if cancel is not None and cancel.cancelled:
                raise CancelledError(cancel.reason or "") from e
            raise RequestError(e.code(), e.details() or "") from e
        finally:
            if unsubscribe:
                unsubscribe()

    def run(
        self,
        source: str | None = None,
        *,
        tools: Iterable[ClientTool] | None = None,
        on_log: Callable[[LogEntry], None] | None = None,
        cancel: Cancellation | None = None,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        max_handler_threads: int = 32,
        **options: Any,
    ) -> Result:
        """run runs a script over a Session stream, serving ``tools`` from
        this process: each call of the script to one of them runs its
        handler on a thread of a pool (concurrently with the others; async
        handlers on an event loop of their own) and the answer goes back
        into the script as soon as it is ready. A handler's ToolError fails
        the call with its code, any other exception with "tool_failed", a
        result that is not JSON with "invalid_output". Console lines go to
        on_log as they happen (if it raises, the execution is cancelled and
        run raises its exception). cancel stops the execution: run sends
        CancelExecution, waits up to cancel_grace seconds for the server's
        result, and raises CancelledError."""
        prepared = prepare_tools(tools)
        if on_log is not None and not callable(on_log):
            raise InvalidRequestError("on_log", "must be callable")
        check_grace(cancel_grace)
        if isinstance(max_handler_threads, bool) or not isinstance(max_handler_threads, int) or max_handler_threads < 1:
            raise InvalidRequestError("max_handler_threads", "must be a positive integer")
        execute = execute_request(source, **options)
        execute.stream_logs = on_log is not None
        start = pb.SessionRequest(start=pb.SessionStart(execute=execute, client_tools=[t.definition for t in prepared.values()]))
        if cancel is not None and cancel.cancelled:
            raise CancelledError(cancel.reason or "")
        return _Session(self._stub, self._metadata, prepared, on_log, cancel, cancel_grace, max_handler_threads).run(start)


class _Session:
    """_Session is one Session stream. The calling thread reads the
    responses; the gRPC runtime's thread drains the outbox into the request
    stream; handler threads of a pool serve tool calls and put their
    answers in the outbox. Everything ends when run returns: the outbox
    closes, the call is cancelled if it has not finished, and handlers
    still running see ctx.ended set."""

    def __init__(
        self,
        stub: pb_grpc.RunnerServiceStub,
        metadata: tuple[tuple[str, str], ...],
        tools: dict[str, PreparedTool],
        on_log: Callable[[LogEntry], None] | None,
        cancel: Cancellation | None,
        grace: float,
        threads: int,
    ) -> None:
        self.stub, self.metadata, self.tools, self.on_log = stub, metadata, tools, on_log
        self.cancel, self.grace, self.threads = cancel, grace, threads
        self.outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.ended = threading.Event()
        self.lock = threading.Lock()
        self.inflight = 0
        self.cancel_reason: str | None = None

    def requests(self) -> Iterator[pb.SessionRequest]:
        while True:
            m = self.outbox.get()
            if m is _CLOSE:
                return
            yield m

    def send(self, m: pb.SessionRequest) -> None:
        if not self.ended.is_set():
            self.outbox.put(m)

    def serve(self, tc: pb.ToolCall) -> None:
        try:
            result = serve_sync(self.tools.get(tc.tool), tc, self.ended)
        finally:
            with self.lock:
                self.inflight -= 1
        self.send(pb.SessionRequest(tool_result=result))

    def run(self, start: pb.SessionRequest) -> Result:
        execution_id = start.start.execute.execution_id
        self.outbox.put(start)
        call = self.stub.Session(self.requests(), metadata=self.metadata)
        pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="ptc-tool")
        timer: threading.Timer | None = None

        def on_cancel(reason: str) -> None:
            nonlocal timer
            self.cancel_reason = reason
            self.send(pb.SessionRequest(cancel=pb.CancelExecution(reason=reason)))
            if self.grace == 0:
                call.cancel()
                return
            timer = threading.Timer(self.grace, call.cancel)
            timer.daemon = True
            timer.start()

        unsubscribe = self.cancel._subscribe(on_cancel) if self.cancel is not None else None
        heard = False
        try:
            for m in call:
                heard = True
                kind = m.WhichOneof("msg")
                if kind == "tool_call":
                    with self.lock:
                        self.inflight += 1
                    pool.submit(self.serve, m.tool_call)
                elif kind == "log" and self.on_log is not None:
                    self.on_log(log_from_pb(m.log))
                elif kind == "result":
                    res = result_from_pb(m.result)
                    if self.cancel_reason is not None:
                        raise CancelledError(self.cancel_reason, res)
                    return res
                # protocol_error: sent only for a malformed answer, which
                # this client never sends; the session goes on.
            if self.cancel_reason is not None:
                raise CancelledError(self.cancel_reason)
            raise ConnectionLostError(grpc.StatusCode.UNAVAILABLE, "the server closed the session without a result", execution_id, self.inflight)
        except grpc.RpcError as e:
            if self.cancel_reason is not None:
                raise CancelledError(self.cancel_reason) from None
            code, details = e.code(), e.details() or ""
            if heard and code in LOST_CODES:
                raise ConnectionLostError(code, details, execution_id, self.inflight) from None
            raise RequestError(code, details) from None
        finally:
            self.ended.set()
            self.outbox.put(_CLOSE)
            call.cancel()
            if timer is not None:
                timer.cancel()
            if unsubscribe is not None:
                unsubscribe()
            pool.shutdown(wait=False, cancel_futures=True)
