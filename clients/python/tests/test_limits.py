"""The client's Limits against the contract: every field of the proto's
Limits message (read from the generated descriptor) is a field of Limits and
survives a round trip. A limit added to proto/ptc/v1/runner.proto and not to
this client fails here. Then the limits, the overflow policy and the
progress events against a real ptcd."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re

import pytest
from google.protobuf.descriptor import FieldDescriptor

from ptc_client import AsyncClient, Client, ClientTool, InvalidRequestError, Limits, ProgressEvent, ToolError
from ptc_client._limits import check_limits, limits_from_pb, limits_pb
from ptc_client._proto import runner_pb2 as pb
from ptc_client.types import Stats, progress_from_pb, result_from_pb


def test_every_proto_limit_is_a_field_of_limits():
    proto = [f.name for f in pb.Limits.DESCRIPTOR.fields]
    client = {f.name for f in dataclasses.fields(Limits)}
    missing = [n for n in proto if n not in client]
    assert not missing, f"ptc_client.Limits does not map {missing} (add them to clients/python/ptc_client/_limits.py)"
    assert sorted(client - set(proto)) == [], "ptc_client.Limits has fields the proto does not"


def test_every_limit_survives_a_round_trip():
    values = {}
    for i, f in enumerate(pb.Limits.DESCRIPTOR.fields, start=1):
        values[f.name] = i + 0.25 if f.message_type is not None else i
    lim = check_limits(values)
    wire = limits_pb(lim)
    for f in pb.Limits.DESCRIPTOR.fields:
        if f.message_type is not None:
            assert wire.HasField(f.name), f.name
        else:
            assert getattr(wire, f.name) == values[f.name], f.name
    assert dataclasses.asdict(limits_from_pb(wire)) == values


@pytest.mark.parametrize(
    "message, converted",
    [(pb.ExecutionStats, Stats), (pb.ToolProgress, ProgressEvent)],
    ids=["ExecutionStats", "ToolProgress"],
)
def test_stats_and_progress_expose_every_proto_field(message, converted):
    fields = {f.name for f in dataclasses.fields(converted)}
    missing = [f.name for f in message.DESCRIPTOR.fields if f.name not in fields]
    assert not missing, f"{converted.__name__} does not expose {missing}"
    # Every field set on the wire arrives set.
    m = message()
    for f in message.DESCRIPTOR.fields:
        if f.message_type is not None:
            getattr(m, f.name).seconds = 1
        elif f.type == FieldDescriptor.TYPE_BOOL:
            setattr(m, f.name, True)
        elif f.type == FieldDescriptor.TYPE_STRING:
            setattr(m, f.name, "x")
        else:
            setattr(m, f.name, 2)  # an int, or the enum value FINISHED
    out = result_from_pb(pb.ExecuteResponse(stats=m)).stats if message is pb.ExecutionStats else progress_from_pb(m)
    dropped = [f.name for f in message.DESCRIPTOR.fields if not getattr(out, f.name)]
    assert not dropped, f"{converted.__name__} drops {dropped}"


@pytest.mark.parametrize(
    "limits, path, message",
    [
        ({"max_log_entries": 2**31}, "limits.max_log_entries", "32 bits"),
        ({"max_result_tokens": 1.5}, "limits.max_result_tokens", "integer"),
        ({"max_result_tokens": -1}, "limits.max_result_tokens", "non-negative"),
        ({"max_log_lines": 3}, "limits.max_log_lines", "max_log_entries"),
    ],
    ids=["entries over 32 bits", "fractional tokens", "negative tokens", "unknown"],
)
def test_bad_limits_are_refused(limits, path, message):
    with Client("127.0.0.1:1") as c:  # never dialled
        with pytest.raises(InvalidRequestError) as exc:
            c.execute("return 1", limits=limits)
    assert exc.value.path == path
    assert message in str(exc.value)


@pytest.mark.parametrize(
    "call, path",
    [
        (lambda c: c.execute("return 1", overflow="drop"), "overflow"),
        (lambda c: c.run("return 1", on_progress=5), "on_progress"),
        (lambda c: c.run("return 1", on_progress=print, progress_values="yes"), "progress_values"),
    ],
    ids=["overflow", "on_progress not callable", "progress_values not a bool"],
)
def test_bad_options_are_refused(call, path):
    with Client("127.0.0.1:1") as c:
        with pytest.raises(InvalidRequestError) as exc:
            call(c)
    assert exc.value.path == path


def test_max_log_entries_caps_the_captured_console_entries(demo):
    res = demo.execute("for (let i = 0; i < 10; i++) console.log('line ' + i); return 'done'", limits=Limits(max_log_entries=3))
    assert res.ok, res.error
    assert res.effective_limits.max_log_entries == 3
    assert [e.message for e in res.logs] == ["line 0", "line 1", "line 2"]
    assert res.logs_truncated


def test_max_result_tokens_fails_an_oversize_result_by_default(demo):
    res = demo.execute("return Array.from({length: 500}, (_, i) => 'item number ' + i)", limits={"max_result_tokens": 100})
    assert res.error is not None and res.error.kind == "OUTPUT_LIMIT"
    assert res.effective_limits.max_result_tokens == 100
    assert not res.stats.result_truncated


BIG = "return {rows: Array.from({length: 500}, (_, i) => ({id: i, name: 'row ' + i})), note: 'n'.repeat(5000)}"


@pytest.mark.parametrize("limits", [{"max_output_bytes": 2000}, {"max_result_tokens": 300}], ids=["bytes", "tokens"])
def test_overflow_truncate_cuts_an_oversize_result_and_says_so(demo, limits):
    res = demo.execute(BIG, limits=limits, overflow="truncate")
    assert res.ok, res.error
    rows = res.value["rows"]
    assert len(rows) < 500
    assert re.fullmatch(r"\[truncated: \d+ more items\]", rows[-1])
    st = res.stats
    assert st.result_truncated
    assert st.untruncated_output_bytes > st.output_bytes == len(res.result_json.encode())
    assert st.dropped_items > 0 and st.cut_strings > 0
    assert res.for_model().startswith(res.result_json)
    assert re.search(r"truncated from \d+ to \d+ bytes", res.for_model())


def test_overflow_truncate_still_fails_a_result_that_cannot_fit(demo):
    res = demo.execute("return 'x'.repeat(5000)", limits={"max_output_bytes": 10}, overflow="truncate")
    assert res.error is not None and res.error.kind == "OUTPUT_LIMIT"


PROGRESS_JS = """
const b = await tools.get_budget_by_level({level: "junior"});
const d = await tools.double({n: 21});
let e; try { await tools.double({n: -1}); } catch (err) { e = err.code; }
return {b, d, e};
"""


def _double(args):
    if args["n"] < 0:
        raise ToolError("negative", "n is negative")
    return args["n"] * 2


DOUBLE = {"name": "double", "handler": _double}


def _check_progress(res, events: list[ProgressEvent]) -> None:
    assert res.ok, res.error
    assert [(e.phase, e.tool, e.outcome) for e in events] == [
        ("STARTED", "get_budget_by_level", ""),
        ("FINISHED", "get_budget_by_level", "ok"),
        ("STARTED", "double", ""),
        ("FINISHED", "double", "ok"),
        ("STARTED", "double", ""),
        ("FINISHED", "double", "negative"),
    ]
    assert [e.seq for e in events] == [r.seq for r in res.trace for _ in (0, 1)]
    assert all(e.dropped == 0 for e in events)
    _, budget_done, double_start, double_done, _, failed = events
    assert json.loads(double_start.arguments_json) == {"n": 21}
    assert double_done.result_json == "42" and double_done.result_bytes == 2
    assert json.loads(budget_done.result_json) == res.value["b"]
    assert "n is negative" in failed.error_message
    assert double_start.started_after >= budget_done.started_after


def test_progress_events_for_server_and_client_tools_in_order(demo):
    events: list[ProgressEvent] = []
    res = demo.run(PROGRESS_JS, tools=[ClientTool(**DOUBLE)], on_progress=events.append, progress_values=True)
    _check_progress(res, events)


def test_progress_without_values_carries_sizes_and_codes_only(demo):
    events: list[ProgressEvent] = []
    res = demo.run("return await tools.get_budget_by_level({level: 'mid'})", on_progress=events.append)
    assert res.ok, res.error
    assert [e.phase for e in events] == ["STARTED", "FINISHED"]
    assert events[0].argument_bytes > 0 and events[1].result_bytes > 0
    assert all(e.arguments_json == "" and e.result_json == "" for e in events)


def test_an_on_progress_that_raises_ends_the_run(plain):
    def on_progress(e):
        raise RuntimeError("progress sink broke")

    with pytest.raises(RuntimeError, match="progress sink broke"):
        plain.run("await tools.t({}); while (true) {}", tools=[ClientTool(name="t", handler=lambda a: None)], limits={"timeout": 20}, on_progress=on_progress)


def test_asyncio_progress_and_truncation(demo_server):
    async def main() -> None:
        async with AsyncClient(demo_server.addr) as c:
            events: list[ProgressEvent] = []

            async def on_progress(e: ProgressEvent) -> None:
                await asyncio.sleep(0)
                events.append(e)

            res = await c.run(PROGRESS_JS, tools=[ClientTool(**DOUBLE)], on_progress=on_progress, progress_values=True)
            _check_progress(res, events)
            cut = await c.execute(BIG, limits={"max_output_bytes": 2000}, overflow="truncate")
            assert cut.ok and cut.stats.result_truncated

    asyncio.run(main())
