"""The synchronous client against real ptcd servers (one with the demo
tools, one without)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import grpc
import pytest

from conftest import TRACEPARENT, ChargeServer, Ptcd
from ptc_client import (
    CancelledError,
    Cancellation,
    Client,
    ClientClosedError,
    ClientTool,
    ConnectionLostError,
    ErrorKind,
    ExecutionError,
    Limits,
    RequestError,
    StartedToolCall,
    ToolError,
)

WAIT = 30  # seconds a test waits for an event before it fails instead of hanging


@pytest.mark.parametrize(
    "source, kind, options",
    [
        ("return (", ErrorKind.SYNTAX_ERROR, {}),
        ("throw new Error('boom')", ErrorKind.SCRIPT_ERROR, {}),
        ("return await tools.get_expenses({member_id: 'nobody', quarter: 'Q1'})", ErrorKind.SCRIPT_ERROR, {}),
        ("while (true) {}", ErrorKind.TIMEOUT, {"limits": Limits(timeout=0.3)}),
        ("for (let i = 0; i < 3; i++) await tools.get_budget_by_level({level: 'mid'})", ErrorKind.TOOL_CALL_LIMIT, {"limits": {"max_tool_calls": 2}}),
        ("return 'x'.repeat(5000)", ErrorKind.OUTPUT_LIMIT, {"limits": {"max_output_bytes": 1000}}),
        ("return 'text'", ErrorKind.RESULT_SCHEMA_VIOLATION, {"result_schema": {"type": "number"}}),
    ],
    ids=["syntax", "exception", "tool error", "timeout", "tool call limit", "output limit", "result schema"],
)
def test_a_script_failure_is_a_result(demo, source, kind, options):
    res = demo.execute(source, **options)
    assert not res.ok
    assert isinstance(res.error, ExecutionError)
    assert res.error.kind == kind
    assert res.error.kind == kind.value  # kinds compare as strings too
    assert res.value is None
    assert res.model_message
    assert res.for_model() == res.model_message
    with pytest.raises(ExecutionError) as exc:
        res.unwrap()
    assert exc.value.kind == kind


def test_input_execution_id_and_limits_round_trip(demo):
    res = demo.execute("return {input, n: input.n * 2}", input={"n": 21}, execution_id="exec-1", limits=Limits(timeout=5, max_tool_calls=7))
    assert res.value == {"input": {"n": 21}, "n": 42}
    assert res.execution_id == "exec-1"
    assert res.effective_limits.timeout == 5
    assert res.effective_limits.max_tool_calls == 7


@pytest.mark.parametrize(
    "options, code",
    [
        ({"allowed_tools": ["no_such_tool"]}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"result_schema": {"$ref": "#/$defs/missing"}}, grpc.StatusCode.INVALID_ARGUMENT),
    ],
    ids=["unknown allowed tool", "schema the server cannot compile"],
)
def test_a_request_problem_is_a_request_error(demo, options, code):
    with pytest.raises(RequestError) as exc:
        demo.execute("return 1", **options)
    assert exc.value.code == code


def test_unknown_module_digest_is_failed_precondition(demo):
    with pytest.raises(RequestError) as exc:
        demo.execute(language="wasm", module_sha256="0" * 64)
    assert exc.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_unreachable_server_is_unavailable():
    with Client("127.0.0.1:1") as c, pytest.raises(RequestError) as exc:
        c.execute("return 1")
    assert exc.value.code == grpc.StatusCode.UNAVAILABLE
    assert not isinstance(exc.value, ConnectionLostError)


def test_list_tools(demo):
    tl = demo.list_tools(include_typescript=True)
    assert [t.name for t in tl.tools] == ["get_budget_by_level", "get_expenses", "get_team_members"]
    assert "declare const tools" in tl.typescript
    assert "body of an async function" in tl.prompt
    ranked = demo.list_tools(query="travel budget of a level", limit=1)
    assert [t.name for t in ranked.tools] == ["get_budget_by_level"] and len(ranked.matches) == 1
    with pytest.raises(RequestError) as exc:
        demo.list_tools(names=["nope"])
    assert exc.value.code_name == "INVALID_ARGUMENT"


def test_server_and_client_tools_in_one_script(demo):
    res = demo.run(
        "const b = await tools.get_budget_by_level({level: 'mid'}); return await tools.fx.to_eur({usd: b.travel_limit})",
        tools=[ClientTool("fx.to_eur", lambda a: {"eur": a["usd"] * 0.5})],
    )
    assert res.value == {"eur": 1000}


@pytest.mark.parametrize("extra", [{}, {"allowed_tools": ["get_budget_by_level"]}])
def test_no_server_tools_leaves_only_client_tools(demo, extra):
    source = (
        "let server; try { await tools.get_budget_by_level({level: 'mid'}); server = 'called' }"
        " catch (e) { server = e.message } return { server, mine: await tools.fx.to_eur({usd: 2}) }"
    )
    tools = [ClientTool("fx.to_eur", lambda a: {"eur": a["usd"] * 0.5})]
    assert demo.run(source, tools=tools, **extra).value == {"server": "called", "mine": {"eur": 1}}
    res = demo.run(source, tools=tools, no_server_tools=True, **extra)
    assert 'unknown tool "get_budget_by_level"' in res.value["server"]
    assert res.value["mine"] == {"eur": 1}


def test_handlers_run_concurrently_and_answer_out_of_order(plain):
    released = threading.Event()

    def first(args):
        # Call 1 stays in flight while calls 2 and 3 are served and answered.
        assert released.wait(WAIT)
        return "first"

    def release(args):
        released.set()
        return None

    res = plain.run(
        """const order = [];
        const first = tools.first({}).then((v) => order.push(v));
        order.push(await tools.second({}));
        await tools.release({});
        await first;
        return order;""",
        tools=[ClientTool("first", first), ClientTool("second", lambda a: "second"), ClientTool("release", release)],
    )
    assert res.value == ["second", "first"], res.error
    assert [r.tool for r in res.trace] == ["first", "second", "release"]


def test_many_calls_are_in_flight_at_once(plain):
    n = 12
    barrier = threading.Barrier(n, timeout=WAIT)

    def wait(args):
        barrier.wait()  # every handler waits until all have started
        return args["i"]

    res = plain.run(
        f"return await Promise.all(Array.from({{length: {n}}}, (_, i) => tools.barrier({{i}})))",
        tools=[ClientTool("barrier", wait)],
        limits={"max_concurrent_tool_calls": n},
    )
    assert res.value == list(range(n)), res.error


def test_call_context(plain):
    seen = {}

    def handler(args, ctx):
        seen["ctx"] = ctx
        return ctx.cancelled()

    res = plain.run("return await tools.ctx({})", execution_id="ctx-test", limits={"timeout": 10}, tools=[ClientTool("ctx", handler)])
    assert res.value is False
    ctx = seen["ctx"]
    assert ctx.idempotency_key == "ctx-test/1"
    assert ctx.tool == "ctx"
    assert ctx.deadline is not None
    assert ctx.cancelled(), "the context ends with the execution"


def test_call_context_without_tracing(plain):
    seen = []
    plain.run("return await tools.ctx({})", tools=[ClientTool("ctx", lambda args, ctx: seen.append(ctx))])
    assert (seen[0].traceparent, seen[0].tracestate) == ("", "")


def test_call_trace_context(traced_server):
    seen = []

    def handler(args, ctx):
        seen.append(ctx)
        return ctx.traceparent

    with Client(traced_server.addr) as c:
        res = c.run("return [await tools.ctx({}), await tools.ctx({})]", tools=[ClientTool("ctx", handler)])
    assert res.value == [s.traceparent for s in seen], res.error
    a, b = (TRACEPARENT.match(s.traceparent) for s in seen)
    assert a and b, [s.traceparent for s in seen]
    assert a[1] == b[1], "both calls are in the execution's trace"
    assert a[2] != b[2], "each call has its own span"
    assert seen[0].tracestate == ""


def test_async_handler_in_the_sync_client(plain):
    async def double(args):
        return args["n"] * 2

    assert plain.run("return await tools.double({n: 21})", tools=[ClientTool("double", double)]).value == 42


def _raise(e):
    def handler(args):
        raise e

    return handler


_cyclic: dict = {}
_cyclic["self"] = _cyclic


@pytest.mark.parametrize(
    "handler, code, message",
    [
        (_raise(ToolError("not_found", "no such city")), "not_found", "no such city"),
        (_raise(KeyError("city")), "tool_failed", "city"),
        (_raise(SystemExit(3)), "tool_panic", "SystemExit"),
        (lambda a: {1, 2}, "invalid_output", "set"),
        (lambda a: float("nan"), "invalid_output", "NaN"),
        (lambda a: _cyclic, "invalid_output", "cyclic"),
    ],
    ids=["ToolError keeps its code", "an exception is tool_failed", "SystemExit is tool_panic", "a set is invalid_output", "NaN is invalid_output", "a cycle is invalid_output"],
)
def test_a_failing_handler_fails_the_call(plain, handler, code, message):
    res = plain.run(
        "try { await tools.t({}); return 'no error'; } catch (e) { return {name: e.name, code: e.code, message: e.message, tool: e.tool}; }",
        tools=[ClientTool("t", handler)],
    )
    assert res.value["name"] == "ToolError"
    assert res.value["code"] == code
    assert message in res.value["message"]
    assert res.value["tool"] == "t"
    assert res.trace[0].error_code == code


def test_arguments_that_violate_the_schema_never_reach_the_handler(plain):
    calls = []

    def square(args):
        calls.append(args)
        return args["n"] ** 2

    res = plain.run(
        """try { await tools.square({n: "seven"}); return "called"; }
        catch (e) { return {name: e.name, code: e.code, errors: e.errors.map((x) => x.path)}; }""",
        tools=[ClientTool("square", square, input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False})],
    )
    assert res.value == {"name": "ToolArgumentError", "code": "invalid_arguments", "errors": ["/n"]}
    assert calls == []
    assert res.trace[0].error_code == "invalid_arguments"


def test_a_result_that_violates_the_output_schema_is_invalid_output(plain):
    res = plain.run(
        "try { return await tools.t({}); } catch (e) { return e.code; }",
        tools=[ClientTool("t", lambda a: {"name": "x"}, output_schema={"type": "object", "required": ["id"]})],
    )
    assert res.value == "invalid_output"


def test_logs_stream_while_the_script_runs(plain):
    logs = []
    saw_two = threading.Event()

    def on_log(entry):
        logs.append(entry)
        if entry.message == "two":
            saw_two.set()

    def wait(args):
        # Answers only once 'two' has arrived: lines stream while the script waits.
        assert saw_two.wait(WAIT)
        return None

    res = plain.run(
        "console.log('one'); console.warn('two'); await tools.t({}); console.error('three'); return 1",
        tools=[ClientTool("t", wait)],
        on_log=on_log,
    )
    assert res.ok, res.error
    assert [(e.level, e.message) for e in logs[:2]] == [("log", "one"), ("warn", "two")]
    assert [e.message for e in res.logs] == ["one", "two", "three"]


def test_an_on_log_that_raises_ends_the_run(plain):
    def on_log(entry):
        raise RuntimeError("log sink broke")

    with pytest.raises(RuntimeError, match="log sink broke"):
        plain.run("console.log('x'); while (true) {}", limits={"timeout": 20}, on_log=on_log)


def test_a_client_tool_named_like_a_server_tool_is_refused(demo):
    with pytest.raises(RequestError) as exc:
        demo.run("return 1", tools=[ClientTool("get_expenses", lambda a: [])])
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT


def test_a_schema_the_server_cannot_compile_is_invalid_argument(plain):
    with pytest.raises(RequestError) as exc:
        plain.run("return 1", tools=[ClientTool("t", lambda a: None, input_schema={"type": "string", "pattern": "(?=a)"})])
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "client_tools" in exc.value.details


def test_cancel_sends_cancel_execution_and_gets_the_cancelled_result(plain):
    cancel = Cancellation()
    seen = {}

    def wait(args, ctx):
        seen["ctx"] = ctx
        cancel.cancel("user pressed stop")
        assert ctx.ended.wait(WAIT)
        return "too late"

    with pytest.raises(CancelledError) as exc:
        plain.run("return await tools.wait({})", tools=[ClientTool("wait", wait)], cancel=cancel, limits={"timeout": 20})
    assert exc.value.reason == "user pressed stop"
    assert exc.value.result is not None and exc.value.result.error.kind == ErrorKind.CANCELLED
    assert seen["ctx"].cancelled()


def test_cancel_with_no_grace_ends_the_stream_at_once(plain):
    cancel = Cancellation()
    cancel.cancel_after(0.05)
    with pytest.raises(CancelledError) as exc:
        plain.run("while (true) {}", cancel=cancel, cancel_grace=0, limits={"timeout": 20})
    assert exc.value.result is None


def test_cancel_execute(demo):
    cancel = Cancellation()
    cancel.cancel_after(0.05, "enough")
    with pytest.raises(CancelledError, match="enough"):
        demo.execute("while (true) {}", cancel=cancel, limits={"timeout": 20})


def test_server_killed_while_a_client_tool_call_is_pending():
    srv = Ptcd()
    seen = {}

    def slow(args, ctx):
        seen["ctx"] = ctx
        srv.stop(signal.SIGKILL)
        assert ctx.ended.wait(WAIT)
        return None

    try:
        with Client(srv.addr) as c, pytest.raises(ConnectionLostError) as exc:
            c.run("return await tools.slow({})", execution_id="doomed-1", tools=[ClientTool("slow", slow)], limits={"timeout": 60})
        assert exc.value.execution_id == "doomed-1"
        assert exc.value.pending_tool_calls == 1
        assert "outcome is unknown" in str(exc.value)
        assert seen["ctx"].cancelled()
    finally:
        srv.stop(signal.SIGKILL)


def test_server_shut_down_gracefully_mid_execution():
    srv = Ptcd()

    def slow(args, ctx):
        threading.Thread(target=srv.stop, daemon=True).start()
        assert ctx.ended.wait(WAIT)
        return None

    try:
        with Client(srv.addr) as c:
            res = c.run("return await tools.slow({})", tools=[ClientTool("slow", slow)], limits={"timeout": 60})
        assert res.error is not None and res.error.kind == ErrorKind.CANCELLED
    finally:
        srv.stop(signal.SIGKILL)


def test_client_is_usable_from_many_threads(plain):
    results = []

    def one(i):
        results.append(plain.run("return await tools.id({i: input})", input=i, tools=[ClientTool("id", lambda a: a["i"])]).value)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + WAIT
    for th in threads:
        th.join(max(0, deadline - time.monotonic()))
    assert sorted(results) == list(range(8))


def test_token_is_sent_as_a_bearer_token(tmp_path):
    from conftest import ptcd_binary

    token = "a-long-random-test-token-0123456789"
    digest = subprocess.run([ptcd_binary(), "hash-token"], input=token + "\n", capture_output=True, text=True, check=True).stdout.strip()
    config = tmp_path / "ptcd.yaml"
    config.write_text(f'auth:\n  enabled: true\ntenants:\n  - name: harness\n    token_hashes: ["{digest}"]\n')
    srv = Ptcd(args=("--config", str(config)))
    try:
        with Client(srv.addr, token=token) as good:
            assert good.run("return await tools.t({})", tools=[ClientTool("t", lambda a: "ok")]).value == "ok"
        for kwargs in ({"token": "wrong-token-wrong-token-wrong"}, {}):
            with Client(srv.addr, **kwargs) as c, pytest.raises(RequestError) as exc:
                c.execute("return 1")
            assert exc.value.code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        srv.stop()


def test_a_result_larger_than_grpcs_default_message_arrives(demo):
    res = demo.run("return 'x'.repeat(5 * 1024 * 1024)", limits={"max_output_bytes": 8 << 20})
    assert res.ok, res.error
    assert len(res.value) == 5 * 1024 * 1024


def test_channel_options_override_the_receive_limit(demo_server):
    with Client(demo_server.addr, options=[("grpc.max_receive_message_length", 1 << 20)]) as c, pytest.raises(RequestError) as exc:
        c.execute("return 'x'.repeat(2 * 1024 * 1024)", limits={"max_output_bytes": 4 << 20})
    assert exc.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_calls_after_close_are_refused_and_calls_in_flight_complete(plain_server):
    c = Client(plain_server.addr)
    entered, release = threading.Event(), threading.Event()
    out: dict[str, object] = {}

    def wait(args):
        entered.set()
        assert release.wait(WAIT)
        return "finished"

    def running():
        out["run"] = c.run("return await tools.wait({})", tools=[ClientTool("wait", wait)]).value

    th = threading.Thread(target=running)
    th.start()
    assert entered.wait(WAIT)
    c.close()
    c.close()  # twice is harmless
    for name, call in [
        ("execute", lambda: c.execute("return 1")),
        ("run", lambda: c.run("return 1")),
        ("list_tools", lambda: c.list_tools()),
        ("resume", lambda: c.resume("abc", [])),
    ]:
        with pytest.raises(ClientClosedError, match="client is closed"):
            call()
    release.set()
    th.join(WAIT)
    assert out["run"] == "finished"
    with pytest.raises(ClientClosedError):
        c.execute("return 1")


@pytest.mark.parametrize("method", ["execute", "run"])
def test_timeout_is_the_calls_deadline(demo, method):
    # timeout= bounds the call as in grpc (and list_tools): the server sees
    # the deadline pass and ends the execution; the script's own limit is
    # limits={"timeout": ...}.
    with pytest.raises(RequestError) as exc:
        getattr(demo, method)("while (true) {}", timeout=0.5, limits={"timeout": 10})
    assert exc.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_resume_takes_a_timeout(demo):
    with pytest.raises(RequestError) as exc:
        demo.resume("not-a-continuation", [], timeout=30)
    assert exc.value.code == grpc.StatusCode.INVALID_ARGUMENT or exc.value.code == grpc.StatusCode.FAILED_PRECONDITION


CHARGE = "await tools.pay.charge({amount: 5}); return 'charged'"


@pytest.mark.parametrize("warm", [False, True], ids=["first call", "connected channel"])
def test_execute_when_the_server_dies_after_a_tool_call_started(tmp_path, warm):
    srv: list[Ptcd] = []
    charge = ChargeServer(tmp_path, lambda: srv[0].stop(signal.SIGKILL))
    srv.append(Ptcd(args=("--config", str(charge.config))))
    try:
        with Client(srv[0].addr) as c:
            if warm:
                c.list_tools()
            with pytest.raises(ConnectionLostError) as exc:
                c.execute(CHARGE, execution_id="charge-1", limits={"timeout": 60})
        assert exc.value.execution_id == "charge-1"
        assert exc.value.code == grpc.StatusCode.UNAVAILABLE
        assert exc.value.started_tool_calls == []  # a unary call streams nothing back
        assert "outcome is unknown" in str(exc.value)
    finally:
        charge.close()
        srv[0].stop(signal.SIGKILL)


def test_run_when_the_server_dies_after_a_tool_call_started(tmp_path):
    srv: list[Ptcd] = []
    charged, seen = threading.Event(), threading.Event()

    # Kill the server once the charge reached the endpoint and the client
    # heard that the call started.
    def on_charge():
        charged.set()
        if seen.wait(WAIT):
            srv[0].stop(signal.SIGKILL)

    def on_progress(ev):
        if ev.phase == "STARTED":
            seen.set()

    charge = ChargeServer(tmp_path, on_charge)
    srv.append(Ptcd(args=("--config", str(charge.config))))
    try:
        with Client(srv[0].addr) as c, pytest.raises(ConnectionLostError) as exc:
            c.run(CHARGE, execution_id="charge-2", limits={"timeout": 60}, on_progress=on_progress)
        assert exc.value.execution_id == "charge-2"
        assert exc.value.started_tool_calls == [StartedToolCall(1, "pay.charge")]
        assert exc.value.pending_tool_calls == 0
        assert "tool calls known to have started: #1 pay.charge" in str(exc.value)
    finally:
        charge.close()
        srv[0].stop(signal.SIGKILL)


def test_an_unreachable_server_is_a_plain_unavailable():
    srv = Ptcd()
    addr = srv.addr
    srv.stop(signal.SIGKILL)
    with Client(addr) as c:
        for call in (lambda: c.execute("return 1"), lambda: c.run("return 1")):
            with pytest.raises(RequestError) as exc:
                call()
            assert type(exc.value) is RequestError
            assert exc.value.code == grpc.StatusCode.UNAVAILABLE
