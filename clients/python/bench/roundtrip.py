"""roundtrip.py measures the round trip of a client-served tool call with
the Python clients, the same way as clients/gobench (see there):

    PYTHONPATH=clients/python python3 clients/python/bench/roundtrip.py 127.0.0.1:7878 [calls] [runs]

Prints one JSON line for the synchronous Client and one for AsyncClient;
scripts/bench-clients.sh runs the three clients against one ptcd.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

from ptc_client import AsyncClient, Client, ClientTool

CALL_SCRIPT = "for (let i = 0; i < input.n; i++) await tools.echo({i}); return input.n"
RUN_SCRIPT = "return await tools.echo({i: input})"
ECHO_SCHEMA = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}


def report(name: str, starts: list[int], run_times: list[float]) -> None:
    call_rtt = sorted((b - a) / 1e3 for a, b in zip(starts, starts[1:]))
    run_times = sorted(run_times)

    def pct(a: list[float], p: int) -> float:
        return round(a[(len(a) - 1) * p // 100], 3)

    print(json.dumps({
        "client": name,
        "calls": len(call_rtt),
        "call_p50_us": pct(call_rtt, 50),
        "call_p99_us": pct(call_rtt, 99),
        "call_mean_us": round(statistics.fmean(call_rtt), 3),
        "runs": len(run_times),
        "run_p50_us": pct(run_times, 50),
        "run_mean_us": round(statistics.fmean(run_times), 3),
    }), flush=True)


def bench_sync(server: str, calls: int, runs: int) -> None:
    starts: list[int] = []

    def echo(args):
        starts.append(time.perf_counter_ns())
        return args

    tool = ClientTool("echo", echo, input_schema=ECHO_SCHEMA)
    with Client(server) as c:
        for n in (200, calls):  # warm-up, then the measurement
            starts.clear()
            c.run(CALL_SCRIPT, input={"n": n}, tools=[tool], limits={"max_tool_calls": n + 10, "timeout": 300}).unwrap()
        call_starts = list(starts)
        run_times = []
        for i in range(runs + 20):
            t0 = time.perf_counter_ns()
            c.run(RUN_SCRIPT, input=i, tools=[tool]).unwrap()
            if i >= 20:  # the first 20 warm up
                run_times.append((time.perf_counter_ns() - t0) / 1e3)
    report("python", call_starts, run_times)


async def bench_async(server: str, calls: int, runs: int) -> None:
    starts: list[int] = []

    async def echo(args):
        starts.append(time.perf_counter_ns())
        return args

    tool = ClientTool("echo", echo, input_schema=ECHO_SCHEMA)
    async with AsyncClient(server) as c:
        for n in (200, calls):
            starts.clear()
            (await c.run(CALL_SCRIPT, input={"n": n}, tools=[tool], limits={"max_tool_calls": n + 10, "timeout": 300})).unwrap()
        call_starts = list(starts)
        run_times = []
        for i in range(runs + 20):
            t0 = time.perf_counter_ns()
            (await c.run(RUN_SCRIPT, input=i, tools=[tool])).unwrap()
            if i >= 20:
                run_times.append((time.perf_counter_ns() - t0) / 1e3)
    report("python (asyncio)", call_starts, run_times)


if __name__ == "__main__":
    server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7878"
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    bench_sync(server, calls, runs)
    asyncio.run(bench_async(server, calls, runs))
