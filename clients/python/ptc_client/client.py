"""Client: the synchronous client. One Client holds one gRPC channel to a
ptcd server and is safe to share between threads."""

from __future__ import annotations

import contextlib
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
import datetime
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import grpc

from ._calls import Calls
from ._ending import execute_lost, session_closed, session_failed, session_result, unary_failed
from ._lost import Readiness, StartedCalls
from ._options import DEFAULT_CANCEL_GRACE, ChannelOptions, call_metadata, channel_options, check_target
from ._proto import runner_pb2 as pb
from ._proto import runner_pb2_grpc as pb_grpc
from ._limits import Limits, LimitsDict
from ._prepare import execution_of, resume_request, session_start, unary_request
from ._request import Language, Overflow
from ._serve import serve_sync
from .cancel import Cancellation
from .durable import Answer, ApprovalCallback, approval_answer, approval_context, decide_sync, pending_from_pb
from .errors import CancelledError, RequestError, request_error
from .tools import ClientTool, PreparedTool
from .types import LogEntry, ProgressEvent, Result, ToolList, log_from_pb, progress_from_pb, result_from_pb, tool_list_from_pb

_CLOSE = object()  # ends the request stream


class Client:
    """Client talks to a ptcd server: ``execute`` runs a script against the
    server's tools, ``run`` also serves client tools from this process, and
    ``list_tools`` describes the server's tools for a model. Request
    problems raise RequestError (a gRPC code) or InvalidRequestError (found
    before sending); a script that fails returns a Result with ok False and
    a classified error.

    Every method takes timeout= (seconds, None for none): the call's gRPC
    deadline. When it passes the call raises RequestError
    DEADLINE_EXCEEDED and the server ends the execution; the script's own
    time limit, which ends it with a TIMEOUT result the model can read, is
    limits={"timeout": ...}.

    Execution options (typed keyword arguments of execute and run):
    language ("javascript", "typescript", "wasm", "python"), wasm_module,
    module_sha256, input (a JSON value), limits (Limits or dict),
    allowed_tools, no_server_tools (True gives the script no server tool,
    whatever allowed_tools says: only the caller's client tools),
    result_schema (a JSON Schema), execution_id (made up
    when absent, so it is known even if the connection fails),
    deterministic, seed, clock_start, include_tool_results,
    require_approval (server tools whose calls the caller approves, besides
    those the server requires approval for), overflow ("fail", the default:
    a result over max_output_bytes or max_result_tokens fails with
    OUTPUT_LIMIT; "truncate": it is cut structurally until it fits, staying
    valid JSON, and Result.stats and Result.model_message say how), and for
    execute resumable.
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
        self._calls = Calls()
        self._readiness = Readiness(self._channel)

    def close(self) -> None:
        """close refuses further calls: they raise ClientClosedError,
        sending nothing. Calls in flight (on other threads) run to
        completion; the channel closes when the last of them ends, at once
        when none is in flight. Closing twice does nothing."""
        if self._calls.close():
            self._close_channel()

    def _close_channel(self) -> None:
        self._readiness.stop()
        self._channel.close()

    @contextlib.contextmanager
    def _call(self) -> Iterator[None]:
        """_call brackets one call on the channel (see close)."""
        self._calls.begin()
        try:
            yield
        finally:
            if self._calls.end():
                self._close_channel()

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
        with self._call():
            try:
                return tool_list_from_pb(self._stub.ListTools(req, metadata=self._metadata, timeout=timeout))
            except grpc.RpcError as e:
                raise request_error(e) from e

    def execute(
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
        call. cancel cancels the call (raising CancelledError).

        Client tools need run, or resumable=True: then a call to one of
        ``tools`` (their handlers are not used), or one that needs
        approval, pauses the execution — the Result has requires_action
        True, its pending_actions and a continuation — and resume goes on.

        If the connection drops once the request could have reached the
        server, execute raises ConnectionLostError (the outcome is unknown:
        the script may have run, side effects included), not a RequestError
        UNAVAILABLE, which means the server was never reached."""
        req = unary_request(locals())  # the arguments as one mapping (see _prepare)
        with self._call():
            mark = self._readiness.mark()
            try:
                return self._unary_call(self._stub.Execute, req, cancel, timeout, result_from_pb)
            except RequestError as e:
                lost = execute_lost(e, self._readiness.reached(mark), req.execution_id)
                if lost is not None:
                    raise lost from e
                raise

    def resume(
        self,
        continuation: str,
        answers: Sequence[Answer],
        *,
        wasm_module: bytes | None = None,
        cancel: Cancellation | None = None,
        timeout: float | None = None,
    ) -> Result:
        """resume goes on with a paused execution (a Result whose
        requires_action is True), on this server or any that shares its
        continuation keys: the continuation and one Answer per pending
        action. It returns the execution's next state: paused again, with a
        new continuation, or completed. A continuation resumes once.

        A refused continuation raises ContinuationError (its kind: EXPIRED,
        USED, TAMPERED, MALFORMED, ...); answers that do not fit the
        pending actions raise RequestError INVALID_ARGUMENT (reason
        "ANSWERS_INVALID", the message names the call) — then nothing ran
        and the same continuation can be sent again with the answers
        fixed. wasm_module is the module of a paused WASM execution, when
        the server no longer holds it (reason "WASM_MODULE_MISSING").

        Retrying is safe: once the server accepted a resume, the execution
        goes on even if this call is cut off (deadline, cancellation,
        dropped connection), and resuming again with the same continuation
        and the same answers (in any order) returns the same next
        state, with the same new continuation, for the server's
        durable.outcome_retention (10 minutes by default), running nothing
        twice. While the execution still runs on another replica the retry
        raises RequestError UNAVAILABLE, reason "RESUME_IN_PROGRESS": retry
        shortly. Other answers, or a retry after the retention, raise
        ContinuationError kind USED."""
        req = resume_request(continuation, answers, wasm_module, cancel)
        return self._unary(self._stub.Resume, req, cancel, timeout, execution_of)

    def _unary(self, method: Any, req: Any, cancel: Cancellation | None, timeout: float | None, convert: Callable[[Any], Result]) -> Result:
        with self._call():
            return self._unary_call(method, req, cancel, timeout, convert)

    def _unary_call(self, method: Any, req: Any, cancel: Cancellation | None, timeout: float | None, convert: Callable[[Any], Result]) -> Result:
        future = method.future(req, metadata=self._metadata, timeout=timeout)
        unsubscribe = cancel._subscribe(lambda _: future.cancel()) if cancel is not None else None
        try:
            return convert(future.result())
        except grpc.FutureCancelledError:
            raise CancelledError(cancel.reason or "" if cancel is not None else "") from None
        except grpc.RpcError as e:
            raise unary_failed(e, cancel) from e
        finally:
            if unsubscribe:
                unsubscribe()

    def run(
        self,
        source: str | None = None,
        *,
        tools: Iterable[ClientTool] | None = None,
        on_log: Callable[[LogEntry], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
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
        this process: each call of the script to one of them runs its
        handler on a thread of a pool (concurrently with the others; async
        handlers on an event loop of their own) and the answer goes back
        into the script as soon as it is ready (at most
        limits max_concurrent_tool_calls, 16 by default, of the script's
        calls are in flight at once; further calls wait). A handler's ToolError fails
        the call with its code, any other exception with "tool_failed", a
        result that is not JSON with "invalid_output". Console lines go to
        on_log as they happen (if it raises, the execution is cancelled and
        run raises its exception). on_progress receives a ProgressEvent as
        each tool call starts and as it finishes, server and client tools
        alike, in order (best effort: see ProgressEvent.dropped; if it
        raises, the same happens); with progress_values the events carry
        the calls' arguments, results and error messages. Both run on the
        thread that called run. cancel stops the execution: run sends
        CancelExecution, waits up to cancel_grace seconds for the server's
        result, and raises CancelledError.

        Calls of server tools that need approval (the server's
        configuration, or require_approval) are decided by on_approval
        while the script runs: on_approval(action) or
        on_approval(action, ctx) — a PendingAction and an ApprovalContext —
        returns True (the tool runs, once), False, or (approved, reason)
        (a denied call rejects in the script with a ToolError of code
        "denied" and the reason). It runs on the handler pool (a coroutine
        function on an event loop of its own). Without on_approval, or if
        it raises, the call is denied."""
        prepared, start = session_start(locals())  # (see _prepare)
        with self._call():
            return _Session(self._stub, self._metadata, prepared, on_log, on_progress, on_approval, cancel, cancel_grace, max_handler_threads, timeout).run(start)


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
        on_progress: Callable[[ProgressEvent], None] | None,
        on_approval: ApprovalCallback | None,
        cancel: Cancellation | None,
        grace: float,
        threads: int,
        timeout: float | None,
    ) -> None:
        self.stub, self.metadata, self.tools, self.on_log, self.on_approval = stub, metadata, tools, on_log, on_approval
        self.on_progress = on_progress
        self.cancel, self.grace, self.threads, self.timeout = cancel, grace, threads, timeout
        self.outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.ended = threading.Event()
        self.lock = threading.Lock()
        self.inflight = 0
        self.cancel_reason: str | None = None
        self.started = StartedCalls()

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

    def approve(self, r: pb.ApprovalRequest) -> None:
        action = pending_from_pb(r.action)
        self.send(approval_answer(action, decide_sync(self.on_approval, action, approval_context(r, self.ended))))

    def run(self, start: pb.SessionRequest) -> Result:
        execution_id = start.start.execute.execution_id
        self.outbox.put(start)
        call = self.stub.Session(self.requests(), metadata=self.metadata, timeout=self.timeout)
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
                elif kind == "approval_request":
                    pool.submit(self.approve, m.approval_request)
                elif kind == "log" and self.on_log is not None:
                    self.on_log(log_from_pb(m.log))
                elif kind == "progress":
                    self.started.saw(m.progress)
                    if self.on_progress is not None:
                        self.on_progress(progress_from_pb(m.progress))
                elif kind == "result":
                    return session_result(m.result, self.cancel_reason)
                # protocol_error: sent only for a malformed answer, which
                # this client never sends; the session goes on.
            raise session_closed(self.cancel_reason, execution_id, self.inflight, self.started)
        except grpc.RpcError as e:
            raise session_failed(e, self.cancel_reason, heard, execution_id, self.inflight, self.started) from None
        finally:
            self.ended.set()
            self.outbox.put(_CLOSE)
            call.cancel()
            if timer is not None:
                timer.cancel()
            if unsubscribe is not None:
                unsubscribe()
            pool.shutdown(wait=False, cancel_futures=True)
