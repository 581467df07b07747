"""The asyncio client against real ptcd servers. Each test runs its own
event loop (asyncio.run), so no pytest plugin is needed."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections import Counter

import grpc
import pytest

from conftest import ChargeServer, Ptcd
from demo import demo_tools
from ptc_client import (
    AsyncClient,
    CancelledError,
    ClientClosedError,
    Cancellation,
    ClientTool,
    ConnectionLostError,
    ErrorKind,
    RequestError,
    StartedToolCall,
    ToolError,
)

WAIT = 30  # seconds a test waits for an event before it fails instead of hanging


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def test_expenses_with_server_and_client_tools(demo_server, plain_server, expenses_js, expected):
    async def main():
        async with AsyncClient(demo_server.addr) as demo, AsyncClient(plain_server.addr) as plain:
            served = await demo.execute(expenses_js)
            calls: Counter[str] = Counter()
            client_served = await plain.run(expenses_js, tools=demo_tools(calls, use_async=True))
            return served, client_served, calls

    served, client_served, calls = run(main())
    assert served.value == expected
    assert client_served.value == expected, client_served.error
    assert calls == {"get_team_members": 1, "get_expenses": 20, "get_budget_by_level": 5}


def test_script_failure_and_request_error(demo_server):
    async def main():
        async with AsyncClient(demo_server.addr) as c:
            res = await c.execute("throw new Error('boom')")
            with pytest.raises(RequestError) as exc:
                await c.execute("return 1", allowed_tools=["no_such_tool"])
            tl = await c.list_tools(include_typescript=True)
            return res, exc.value, tl

    res, err, tl = run(main())
    assert res.error.kind == ErrorKind.SCRIPT_ERROR
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "declare const tools" in tl.typescript


def test_handlers_run_concurrently_and_answer_out_of_order(plain_server):
    async def main():
        released = asyncio.Event()

        async def first(args):
            await asyncio.wait_for(released.wait(), WAIT)
            return "first"

        async def release(args):
            released.set()

        async with AsyncClient(plain_server.addr) as c:
            return await c.run(
                """const order = [];
                const first = tools.first({}).then((v) => order.push(v));
                order.push(await tools.second({}));
                await tools.release({});
                await first;
                return order;""",
                tools=[ClientTool("first", first), ClientTool("second", lambda a: "second"), ClientTool("release", release)],
            )

    res = run(main())
    assert res.value == ["second", "first"], res.error


def test_sync_handlers_run_on_threads(plain_server):
    n = 8
    barrier = threading.Barrier(n, timeout=WAIT)

    def wait(args):
        barrier.wait()  # blocks its thread, never the event loop
        return args["i"]

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            return await c.run(
                f"return await Promise.all(Array.from({{length: {n}}}, (_, i) => tools.barrier({{i}})))",
                tools=[ClientTool("barrier", wait)],
            )

    assert run(main()).value == list(range(n))


def _raise(e):
    async def handler(args):
        raise e

    return handler


@pytest.mark.parametrize(
    "handler, code",
    [
        (_raise(ToolError("not_found", "no such city")), "not_found"),
        (_raise(ValueError("bad")), "tool_failed"),
        (lambda a: {1, 2}, "invalid_output"),
    ],
    ids=["ToolError", "exception", "not JSON"],
)
def test_a_failing_handler_fails_the_call(plain_server, handler, code):
    async def main():
        async with AsyncClient(plain_server.addr) as c:
            return await c.run("try { await tools.t({}); } catch (e) { return e.code; }", tools=[ClientTool("t", handler)])

    assert run(main()).value == code


def test_schema_violation_never_reaches_the_handler(plain_server):
    calls = []

    async def square(args):
        calls.append(args)
        return args["n"] ** 2

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            return await c.run(
                "try { await tools.square({n: 'x'}); } catch (e) { return e.name; }",
                tools=[ClientTool("square", square, input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})],
            )

    assert run(main()).value == "ToolArgumentError"
    assert calls == []


def test_logs_with_a_coroutine_callback(plain_server):
    lines = []

    async def on_log(entry):
        lines.append(entry.message)

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            return await c.run("console.log('a'); await tools.t({}); return 1", tools=[ClientTool("t", lambda a: None)], on_log=on_log)

    res = run(main())
    assert res.ok and [e.message for e in res.logs] == ["a"]
    assert lines in ([], ["a"])  # live lines are best effort; the result holds them all


def test_cancellation_gets_the_cancelled_result(plain_server):
    cancel = Cancellation()

    async def wait(args, ctx):
        cancel.cancel("user pressed stop")
        await asyncio.sleep(WAIT)

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            with pytest.raises(CancelledError) as exc:
                await c.run("return await tools.wait({})", tools=[ClientTool("wait", wait)], cancel=cancel, limits={"timeout": 20})
            return exc.value

    err = run(main())
    assert err.reason == "user pressed stop"
    assert err.result is not None and err.result.error.kind == ErrorKind.CANCELLED


def test_cancellation_without_grace(plain_server):
    cancel = Cancellation()
    cancel.cancel_after(0.05)

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            with pytest.raises(CancelledError) as exc:
                await c.run("while (true) {}", cancel=cancel, cancel_grace=0, limits={"timeout": 20})
            with pytest.raises(CancelledError):
                c2 = Cancellation()
                c2.cancel_after(0.05)
                await c.execute("while (true) {}", cancel=c2, limits={"timeout": 20})
            return exc.value

    assert run(main()).result is None


def test_cancelling_the_task_ends_the_execution(plain_server):
    started = asyncio.Event()

    async def wait(args):
        started.set()
        await asyncio.sleep(WAIT)

    async def main():
        async with AsyncClient(plain_server.addr) as c:
            task = asyncio.create_task(c.run("return await tools.wait({})", tools=[ClientTool("wait", wait)], limits={"timeout": 20}))
            await asyncio.wait_for(started.wait(), WAIT)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The client is still usable afterwards.
            return await c.execute("return 7")

    assert run(main()).value == 7


def test_server_killed_while_a_client_tool_call_is_pending():
    srv = Ptcd()

    async def slow(args, ctx):
        await asyncio.to_thread(srv.stop, signal.SIGKILL)
        await asyncio.sleep(WAIT)

    async def main():
        async with AsyncClient(srv.addr) as c:
            with pytest.raises(ConnectionLostError) as exc:
                await c.run("return await tools.slow({})", execution_id="doomed-2", tools=[ClientTool("slow", slow)], limits={"timeout": 60})
            return exc.value

    try:
        err = run(main())
        assert err.execution_id == "doomed-2"
        assert err.pending_tool_calls == 1
    finally:
        srv.stop(signal.SIGKILL)


def test_calls_after_close_are_refused_and_calls_in_flight_complete(plain_server):
    async def main():
        c = AsyncClient(plain_server.addr)
        entered, release = asyncio.Event(), asyncio.Event()

        async def wait(args):
            entered.set()
            await release.wait()
            return "finished"

        running = asyncio.ensure_future(c.run("return await tools.wait({})", tools=[ClientTool("wait", wait)]))
        await entered.wait()
        await c.close()
        await c.close()  # twice is harmless
        for call in (c.execute("return 1"), c.run("return 1"), c.list_tools(), c.resume("abc", [])):
            with pytest.raises(ClientClosedError, match="client is closed"):
                await call
        release.set()
        return (await running).value

    assert run(main()) == "finished"


@pytest.mark.parametrize("method", ["execute", "run"])
def test_timeout_is_the_calls_deadline(demo_server, method):
    async def main():
        async with AsyncClient(demo_server.addr) as c:
            with pytest.raises(RequestError) as exc:
                await getattr(c, method)("while (true) {}", timeout=0.5, limits={"timeout": 10})
            return exc.value.code

    assert run(main()) == grpc.StatusCode.DEADLINE_EXCEEDED


CHARGE = "await tools.pay.charge({amount: 5}); return 'charged'"


def test_execute_and_run_when_the_server_dies_after_a_tool_call_started(tmp_path):
    srv: list[Ptcd] = []
    seen = threading.Event()

    def on_charge():
        if seen.wait(WAIT):
            srv[-1].stop(signal.SIGKILL)

    charge = ChargeServer(tmp_path, on_charge)

    async def one(method, execution_id):
        srv.append(Ptcd(args=("--config", str(charge.config))))
        seen.clear()
        if method == "execute":
            seen.set()  # nothing to hear: a unary call streams nothing back
        async with AsyncClient(srv[-1].addr) as c:
            kw = {"on_progress": lambda ev: seen.set() if ev.phase == "STARTED" else None} if method == "run" else {}
            with pytest.raises(ConnectionLostError) as exc:
                await getattr(c, method)(CHARGE, execution_id=execution_id, limits={"timeout": 60}, **kw)
            return exc.value

    try:
        lost = run(one("execute", "charge-a1"))
        assert lost.execution_id == "charge-a1" and lost.started_tool_calls == []
        lost = run(one("run", "charge-a2"))
        assert lost.execution_id == "charge-a2"
        assert lost.started_tool_calls == [StartedToolCall(1, "pay.charge")]
    finally:
        charge.close()
        for s in srv:
            s.stop(signal.SIGKILL)
