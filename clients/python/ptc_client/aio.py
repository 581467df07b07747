"""AsyncClient: the asyncio client, on grpc.aio. One AsyncClient holds one
channel and belongs to the event loop it was created on."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
import datetime
from typing import Any, AsyncIterator, Callable, Iterable, Mapping, Sequence

import grpc
import grpc.aio

from ._calls import Calls
from ._ending import execute_lost, session_closed, session_failed, session_result, unary_failed
from ._lost import StartedCalls
from ._options import DEFAULT_CANCEL_GRACE, ChannelOptions, call_metadata, channel_options, check_target
from ._proto import runner_pb2 as pb
from ._proto import runner_pb2_grpc as pb_grpc
from ._limits import Limits, LimitsDict
from ._prepare import execution_of, resume_request, session_start, unary_request
from ._request import Language, Overflow
from ._serve import serve_async
from .cancel import Cancellation
from .durable import Answer, ApprovalCallback, approval_answer, approval_context, decide_async, pending_from_pb
from .errors import CancelledError, RequestError, request_error
from .tools import ClientTool, PreparedTool
from .types import LogEntry, ProgressEvent, Result, ToolList, log_from_pb, progress_from_pb, result_from_pb, tool_list_from_pb


class AsyncClient:
    """AsyncClient is Client for asyncio: the same methods, as coroutines.
    Client tool handlers may be coroutine functions (run as tasks) or plain
    functions (run on worker threads so that they cannot block the loop).

    Cancel an execution with a Cancellation (cancel=, from any thread: run
    sends CancelExecution and waits up to cancel_grace for the server's
    result, then raises ptc_client.CancelledError) or by cancelling the
    task (the RPC ends at once, which cancels the execution on the server,
    and asyncio.CancelledError propagates as usual)."""

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        token: str | None = None,
        metadata: dict[str, str] | None = None,
        options: ChannelOptions | None = None,
    ) -> None:
        """Connect to the server at target, e.g. "127.0.0.1:7878" (see Client)."""
        check_target(target)
        opts = channel_options(options)
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(target, options=opts)
        else:
            self._channel = grpc.aio.secure_channel(target, credentials, options=opts)
        self._stub = pb_grpc.RunnerServiceStub(self._channel)
        self._metadata = call_metadata(token, metadata)
        self._calls = Calls()

    async def close(self) -> None:
        """close refuses further calls: they raise ClientClosedError,
        sending nothing. Calls in flight (other tasks) run to completion;
        the channel closes when the last of them ends, at once when none is
        in flight. Closing twice does nothing."""
        if self._calls.close():
            await self._channel.close()

    @contextlib.asynccontextmanager
    async def _call(self) -> AsyncIterator[None]:
        """_call brackets one call on the channel (see close)."""
        self._calls.begin()
        try:
            yield
        finally:
            if self._calls.end():
                await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def list_tools(
        self,
        *,
        query: str = "",
        limit: int = 0,
        names: Iterable[str] | None = None,
        include_typescript: bool = False,
        timeout: float | None = None,
    ) -> ToolList:
        """list_tools describes the server's tools (see Client.list_tools)."""
        req = pb.ListToolsRequest(query=query, limit=limit, names=list(names or []), include_typescript=include_typescript)
        async with self._call():
            try:
                return tool_list_from_pb(await self._stub.ListTools(req, metadata=self._metadata, timeout=timeout))
            except grpc.aio.AioRpcError as e:
                raise request_error(e) from e

    async def execute(
        self,
        source: str | None = None,
        *,
        tools: Iterable[ClientTool] | None = None,
        cancel: Cancellation | None = None,
        timeout: float | None = None,
        resumable: bool = False,
        language: Language | None = None,
        wasm_module: bytes | None = None,
        module_sha256: str | None = None,
        input: Any = None,
        limits: Limits | LimitsDict | None = None,
        allowed_tools: Iterable[str] | None = None,
        no_server_tools: bool = False,
        result_schema: Mapping[str, Any] | None = None,
        execution_id: str | None = None,
        deterministic: bool = False,
        seed: int | None = None,
        clock_start: datetime.datetime | None = None,
        include_tool_results: bool = False,
        require_approval: Iterable[str] | None = None,
        overflow: Overflow | None = None,
    ) -> Result:
        """execute runs a script against the server's tools in one unary
        call; with resumable=True it may pause (see Client.execute)."""
        req = unary_request(locals())  # the arguments as one mapping (see _prepare)
        # The watcher notes whether the channel is or becomes READY while
        # the call runs; it ends with the call.
        reached = asyncio.Event()
        watcher = asyncio.ensure_future(_watch_ready(self._channel, reached))
        try:
            return await self._unary(self._stub.Execute, req, cancel, timeout, result_from_pb)
        except RequestError as e:
            lost = execute_lost(e, reached.is_set(), req.execution_id)
            if lost is not None:
                raise lost from e
            raise
        finally:
            watcher.cancel()

    async def resume(
        self,
        continuation: str,
        answers: Sequence[Answer],
        *,
        wasm_module: bytes | None = None,
        cancel: Cancellation | None = None,
        timeout: float | None = None,
    ) -> Result:
        """resume goes on with a paused execution (see Client.resume)."""
        req = resume_request(continuation, answers, wasm_module, cancel)
        return await self._unary(self._stub.Resume, req, cancel, timeout, execution_of)

    async def _unary(self, method: Any, req: Any, cancel: Cancellation | None, timeout: float | None, convert: Callable[[Any], Result]) -> Result:
        async with self._call():
            return await self._unary_call(method, req, cancel, timeout, convert)

    async def _unary_call(self, method: Any, req: Any, cancel: Cancellation | None, timeout: float | None, convert: Callable[[Any], Result]) -> Result:
        loop = asyncio.get_running_loop()
        call = method(req, metadata=self._metadata, timeout=timeout)
        unsubscribe = cancel._subscribe(lambda _: loop.call_soon_threadsafe(call.cancel)) if cancel is not None else None
        try:
            return convert(await call)
        except asyncio.CancelledError:
            if cancel is not None and cancel.cancelled and call.cancelled():
                raise CancelledError(cancel.reason or "") from None
            call.cancel()
            raise
        except grpc.aio.AioRpcError as e:
            raise unary_failed(e, cancel) from e
        finally:
            if unsubscribe is not None:
                unsubscribe()

    async def run(
        self,
        source: str | None = None,
        *,
        tools: Iterable[ClientTool] | None = None,
        on_log: Callable[[LogEntry], Any] | None = None,
        on_progress: Callable[[ProgressEvent], Any] | None = None,
        progress_values: bool = False,
        on_approval: ApprovalCallback | None = None,
        cancel: Cancellation | None = None,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        max_handler_threads: int = 32,
        timeout: float | None = None,
        language: Language | None = None,
        wasm_module: bytes | None = None,
        module_sha256: str | None = None,
        input: Any = None,
        limits: Limits | LimitsDict | None = None,
        allowed_tools: Iterable[str] | None = None,
        no_server_tools: bool = False,
        result_schema: Mapping[str, Any] | None = None,
        execution_id: str | None = None,
        deterministic: bool = False,
        seed: int | None = None,
        clock_start: datetime.datetime | None = None,
        include_tool_results: bool = False,
        require_approval: Iterable[str] | None = None,
        overflow: Overflow | None = None,
    ) -> Result:
        """run runs a script over a Session stream, serving ``tools`` from
        this process (see Client.run). Coroutine handlers run as tasks;
        plain functions on a pool of max_handler_threads threads of this
        run. on_log and on_progress may be coroutine functions (awaited in
        order, before the next message is read), and so may on_approval
        (each approval request is decided in a task of its own)."""
        prepared, start = session_start(locals())  # (see _prepare)
        # Threads start only for plain-function handlers that are called.
        pool = ThreadPoolExecutor(max_workers=max_handler_threads, thread_name_prefix="ptc-tool")
        try:
            async with self._call():
                return await _AsyncSession(self._stub, self._metadata, prepared, on_log, on_progress, on_approval, cancel, cancel_grace, pool, timeout).run(start)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


async def _watch_ready(channel: grpc.aio.Channel, reached: asyncio.Event) -> None:
    """_watch_ready sets reached once the channel is READY (now or later)."""
    state = channel.get_state(try_to_connect=False)
    while state != grpc.ChannelConnectivity.READY:
        await channel.wait_for_state_change(state)
        state = channel.get_state(try_to_connect=False)
    reached.set()


class _AsyncSession:
    """_AsyncSession is one Session stream: this task reads the responses;
    a task per tool call serves it and writes its answer (writes are
    serialised by a lock). Everything ends when run returns: the call is
    cancelled if it has not finished, handler tasks are cancelled and
    handlers on threads see ctx.ended set."""

    def __init__(
        self,
        stub: pb_grpc.RunnerServiceStub,
        metadata: tuple[tuple[str, str], ...],
        tools: dict[str, PreparedTool],
        on_log: Callable[[LogEntry], Any] | None,
        on_progress: Callable[[ProgressEvent], Any] | None,
        on_approval: ApprovalCallback | None,
        cancel: Cancellation | None,
        grace: float,
        executor: ThreadPoolExecutor,
        timeout: float | None,
    ) -> None:
        self.stub, self.metadata, self.tools, self.on_log, self.on_approval = stub, metadata, tools, on_log, on_approval
        self.on_progress = on_progress
        self.cancel, self.grace, self.executor, self.timeout = cancel, grace, executor, timeout
        self.ended = threading.Event()
        self.write_lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        self.cancel_reason: str | None = None
        self.started = StartedCalls()
        self.gave_up = False  # this session cancelled the call itself

    async def send(self, call: Any, m: pb.SessionRequest) -> None:
        if self.ended.is_set():
            return
        async with self.write_lock:
            try:
                await call.write(m)
            except (grpc.aio.AioRpcError, grpc.aio.UsageError, asyncio.InvalidStateError):
                pass  # the stream already failed; the read loop reports it

    async def serve(self, call: Any, tc: pb.ToolCall) -> None:
        result = await serve_async(self.tools.get(tc.tool), tc, self.ended, self.executor)
        await self.send(call, pb.SessionRequest(tool_result=result))

    async def approve(self, call: Any, r: pb.ApprovalRequest) -> None:
        action = pending_from_pb(r.action)
        decision = await decide_async(self.on_approval, action, approval_context(r, self.ended), self.executor)
        await self.send(call, approval_answer(action, decision))

    async def run(self, start: pb.SessionRequest) -> Result:
        execution_id = start.start.execute.execution_id
        loop = asyncio.get_running_loop()
        call = self.stub.Session(metadata=self.metadata, timeout=self.timeout)
        grace_handle: asyncio.TimerHandle | None = None

        def give_up() -> None:
            self.gave_up = True
            call.cancel()

        def on_cancel(reason: str) -> None:  # on the loop
            nonlocal grace_handle
            if self.ended.is_set() or self.cancel_reason is not None:
                return
            self.cancel_reason = reason
            self._spawn(self.send(call, pb.SessionRequest(cancel=pb.CancelExecution(reason=reason))))
            if self.grace == 0:
                give_up()
            else:
                grace_handle = loop.call_later(self.grace, give_up)

        unsubscribe = self.cancel._subscribe(lambda r: loop.call_soon_threadsafe(on_cancel, r)) if self.cancel is not None else None
        heard = False
        try:
            await self.send(call, start)
            while True:
                m = await call.read()
                if m is grpc.aio.EOF:
                    raise session_closed(self.cancel_reason, execution_id, self._inflight(), self.started)
                heard = True
                kind = m.WhichOneof("msg")
                if kind == "tool_call":
                    self._spawn(self.serve(call, m.tool_call))
                elif kind == "approval_request":
                    self._spawn(self.approve(call, m.approval_request))
                elif kind == "log" and self.on_log is not None:
                    out = self.on_log(log_from_pb(m.log))
                    if asyncio.iscoroutine(out):
                        await out
                elif kind == "progress":
                    self.started.saw(m.progress)
                    if self.on_progress is not None:
                        out = self.on_progress(progress_from_pb(m.progress))
                        if asyncio.iscoroutine(out):
                            await out
                elif kind == "result":
                    return session_result(m.result, self.cancel_reason)
        except asyncio.CancelledError:
            if self.gave_up and self.cancel_reason is not None:
                raise CancelledError(self.cancel_reason) from None
            raise
        except grpc.aio.AioRpcError as e:
            raise session_failed(e, self.cancel_reason, heard, execution_id, self._inflight(), self.started) from None
        finally:
            self.ended.set()
            call.cancel()
            if grace_handle is not None:
                grace_handle.cancel()
            if unsubscribe is not None:
                unsubscribe()
            for t in self.tasks:
                t.cancel()

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self.tasks.add(t)
        t.add_done_callback(self.tasks.discard)

    def _inflight(self) -> int:
        return sum(1 for t in self.tasks if not t.done())
