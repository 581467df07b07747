"""Durable executions and approvals against real ptcd servers: a resumable
execute that pauses at a client tool and at an approval, resume with
answers, approvals decided over a Session (sync and asyncio), and every
refused continuation as a ContinuationError of its kind."""

from __future__ import annotations

import asyncio
import datetime
import pathlib
import secrets
import tempfile
import threading
import time
from typing import Iterator

import grpc
import pytest
from conftest import TRACEPARENT, Ptcd

from ptc_client import (
    Answer,
    ApprovalContext,
    AsyncClient,
    Client,
    ClientTool,
    ContinuationError,
    ErrorKind,
    InvalidRequestError,
    PendingAction,
    PtcError,
    RequestError,
    Result,
)

# A review that asks the caller whom to review (a client tool: pause 1)
# and reads the member's budget, a server tool this server's configuration
# requires approval for (pause 2). A denial is caught.
REVIEW_JS = """
const team = await tools.get_team_members({department: "sales"});
const pick = await tools.ask_reviewer({question: "Whose travel?", options: team.map((m) => m.id)});
const member = team.find((m) => m.id === pick.member_id);
try {
  const budget = await tools.get_budget_by_level({level: member.level});
  return {id: member.id, level: member.level, limit: budget.travel_limit};
} catch (e) {
  return {id: member.id, code: e.code, message: e.message};
}"""

ASK_REVIEWER = ClientTool(
    "ask_reviewer",
    description="Ask the human reviewer to pick a team member.",
    input_schema={"type": "object", "properties": {"question": {"type": "string"}, "options": {"type": "array"}}, "required": ["question"]},
    output_schema={"type": "object", "properties": {"member_id": {"type": "string"}}, "required": ["member_id"]},
)

# The approval-gated server tool alone, for Session runs.
BUDGET_JS = """
try {
  const b = await tools.get_budget_by_level({level: "senior"});
  return {ok: true, limit: b.travel_limit};
} catch (e) {
  return {ok: false, code: e.code, message: e.message};
}"""


@pytest.fixture(scope="module")
def durable_server() -> Iterator[Ptcd]:
    """A ptcd with the demo tools, continuation key "t1", and approval
    required for get_budget_by_level."""
    cfg = pathlib.Path(tempfile.mkdtemp(prefix="ptc-durable-py-")) / "ptcd.yaml"
    cfg.write_text(
        "durable:\n  keys:\n    - id: t1\n      secret_env: PTC_TEST_DURABLE_KEY\napprovals:\n  tools: [get_budget_by_level]\n"
    )
    srv = Ptcd(demo_tools=True, args=("--config", str(cfg)), env={"PTC_TEST_DURABLE_KEY": secrets.token_hex(32)})
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def short_server() -> Iterator[Ptcd]:
    """A ptcd whose continuations live one second, under a key of its own."""
    srv = Ptcd(demo_tools=True, args=("--durable.ttl", "1s"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def dc(durable_server: Ptcd) -> Iterator[Client]:
    with Client(durable_server.addr) as c:
        yield c


@pytest.fixture(scope="module")
def short(short_server: Ptcd) -> Iterator[Client]:
    with Client(short_server.addr) as c:
        yield c


def pause1(c: Client, execution_id: str | None = None) -> tuple[Result, PendingAction]:
    """pause1 starts the review and checks its first pause."""
    res = c.execute(REVIEW_JS, resumable=True, tools=[ASK_REVIEWER], execution_id=execution_id or f"rev-{secrets.token_hex(4)}")
    assert res.requires_action and res.state == "REQUIRES_ACTION", res.error
    assert not res.ok and res.error is None
    assert len(res.pending_actions) == 1 and res.continuation
    assert res.continuation_expire_time is not None and res.continuation_expire_time.tzinfo is not None
    return res, res.pending_actions[0]


def test_pending_action_trace_context(traced_server):
    with Client(traced_server.addr) as c:
        res, ask = pause1(c)
        assert TRACEPARENT.match(ask.traceparent), ask.traceparent
        assert ask.tracestate == ""
        done = c.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-04"})])
        assert done.state != "FAILED", done.error


def test_pending_action_without_tracing(short):
    _, ask = pause1(short)
    assert (ask.traceparent, ask.tracestate) == ("", "")


def refused(exc: pytest.ExceptionInfo[ContinuationError], kind: str, code: grpc.StatusCode) -> None:
    e = exc.value
    assert isinstance(e, RequestError)
    assert (e.kind, e.code, e.reason) == (kind, code, f"CONTINUATION_{kind}"), e


def test_pause_and_resume(dc: Client) -> None:
    res, ask = pause1(dc, "rev-1")
    assert (ask.kind, ask.approval, ask.seq, ask.tool, ask.idempotency_key, ask.reason) == ("CLIENT_TOOL", False, 2, "ask_reviewer", "rev-1/2", "")
    assert len(ask.arguments["options"]) == 8
    assert len(res.trace) == 1  # get_team_members ran; the pending call is not in the trace
    assert "paused" in res.for_model() and "tools.ask_reviewer" in res.for_model()
    with pytest.raises(PtcError, match="paused"):
        res.unwrap()

    second = dc.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-04"})])
    assert second.requires_action and second.continuation != res.continuation
    (appr,) = second.pending_actions
    assert (appr.kind, appr.approval, appr.tool, appr.arguments) == ("APPROVAL", True, "get_budget_by_level", {"level": "staff"})
    assert appr.idempotency_key == f"rev-1/{appr.seq}" and appr.reason

    done = dc.resume(second.continuation, [Answer.approved(appr)])
    assert done.state == "COMPLETED" and done.ok, done.error
    assert done.value == {"id": "sal-04", "level": "staff", "limit": 4000}
    assert done.pending_actions == [] and done.continuation == "" and done.execution_id == "rev-1"


def test_denial_and_client_tool_error(dc: Client) -> None:
    res, ask = pause1(dc)
    second = dc.resume(res.continuation, [Answer(ask.call_id, output={"member_id": "sal-01"})])
    done = dc.resume(second.continuation, [Answer.denied(second.pending_actions[0], "over budget this quarter")])
    assert done.value == {"id": "sal-01", "code": "denied", "message": "over budget this quarter"}
    assert done.trace[-1].error_code == "denied"

    res, ask = pause1(dc)
    failed = dc.resume(res.continuation, [Answer.with_error(ask, "no_reviewer", "nobody is on duty")])
    assert not failed.ok and failed.error is not None and failed.error.kind == ErrorKind.SCRIPT_ERROR
    assert "no_reviewer" in failed.error.message


def test_used_continuation(dc: Client) -> None:
    res, ask = pause1(dc)
    answers = [Answer.with_output(ask, {"member_id": "sal-02"})]
    nxt = dc.resume(res.continuation, answers)
    assert nxt.requires_action
    # Retried with the same answers: the same next state.
    assert dc.resume(res.continuation, answers).continuation == nxt.continuation
    with pytest.raises(ContinuationError) as exc:
        dc.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-03"})])
    refused(exc, "USED", grpc.StatusCode.FAILED_PRECONDITION)
    assert "other answers" in exc.value.details


def test_altered_malformed_and_foreign_continuations(dc: Client, short: Client) -> None:
    res, ask = pause1(dc)
    tok = res.continuation
    i = len(tok) // 2
    altered = tok[:i] + ("B" if tok[i] == "A" else "A") + tok[i + 1 :]
    answers = [Answer.with_output(ask, {"member_id": "sal-03"})]
    cases = [
        ("altered", dc, altered, "TAMPERED", grpc.StatusCode.INVALID_ARGUMENT),
        ("garbage", dc, "not a continuation!", "MALFORMED", grpc.StatusCode.INVALID_ARGUMENT),
        ("truncated", dc, tok[:20], "MALFORMED", grpc.StatusCode.INVALID_ARGUMENT),
        ("another server's key", short, tok, "UNKNOWN_KEY", grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for name, client, t, kind, code in cases:
        with pytest.raises(ContinuationError) as exc:
            client.resume(t, answers)
        refused(exc, kind, code)
    # Nothing was used up: the real continuation still works.
    assert dc.resume(tok, answers).pending_actions[0].tool == "get_budget_by_level"


def test_expired_continuation(short: Client) -> None:
    res, ask = pause1(short)
    # The server issued it for one second; wait until its stated expiry has
    # passed on this clock (and a second more for clock granularity).
    assert res.continuation_expire_time is not None
    wait = (res.continuation_expire_time - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 1
    time.sleep(max(0.0, wait))
    with pytest.raises(ContinuationError) as exc:
        short.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-01"})])
    refused(exc, "EXPIRED", grpc.StatusCode.FAILED_PRECONDITION)


@pytest.mark.parametrize(
    "name,answers,needle",
    [
        ("unknown call id", lambda ask: [Answer.with_output("c99", {})], "c99"),
        ("missing answer", lambda ask: [], "has no answer"),
        ("output fails the output schema", lambda ask: [Answer.with_output(ask, {"who": 1})], "output schema"),
        ("approval of a client tool call", lambda ask: [Answer.approved(ask)], "not an approval"),
    ],
)
def test_answers_refused_by_the_server(dc: Client, name: str, answers, needle: str) -> None:
    res, ask = pause1(dc)
    with pytest.raises(RequestError) as exc:
        dc.resume(res.continuation, answers(ask))
    e = exc.value
    assert not isinstance(e, ContinuationError)
    assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "ANSWERS_INVALID"), e
    assert needle in e.details
    # Nothing was used up.
    assert dc.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-05"})]).requires_action


@pytest.mark.parametrize(
    "name,call,path",
    [
        ("empty continuation", lambda c: c.resume("", []), "continuation"),
        ("answers not a list", lambda c: c.resume("x", Answer.approved("c1")), "answers"),
        ("not an Answer", lambda c: c.resume("x", [{"call_id": "c1"}]), "answers[0]"),
        ("no call id", lambda c: c.resume("x", [Answer("", approve=True)]), "answers[0].call_id"),
        ("answered twice", lambda c: c.resume("x", [Answer.approved("c1"), Answer.approved("c1")]), "answers[1].call_id"),
        ("two outcomes", lambda c: c.resume("x", [Answer("c1", output=1, approve=True)]), "answers[0]"),
        ("no outcome", lambda c: c.resume("x", [Answer("c1")]), "answers[0]"),
        ("approve False alone", lambda c: c.resume("x", [Answer("c1", approve=False)]), "answers[0]"),
        ("approve and deny", lambda c: c.resume("x", [Answer("c1", approve=True, deny=True)]), "answers[0]"),
        ("approve the string true", lambda c: c.resume("x", [Answer("c1", approve="true")]), "answers[0].approve"),  # type: ignore[arg-type]
        ("approve the number 1", lambda c: c.resume("x", [Answer("c1", approve=1)]), "answers[0].approve"),  # type: ignore[arg-type]
        ("deny the string false", lambda c: c.resume("x", [Answer("c1", deny="false")]), "answers[0].deny"),  # type: ignore[arg-type]
        ("approve None", lambda c: c.resume("x", [Answer("c1", approve=None)]), "answers[0].approve"),  # type: ignore[arg-type]
        ("output not JSON", lambda c: c.resume("x", [Answer.with_output("c1", {"s": {1, 2}})]), "answers[0].output"),
        ("error without code", lambda c: c.resume("x", [Answer.with_error("c1", "")]), "answers[0].error"),
        ("reason too long", lambda c: c.resume("x", [Answer.denied("c1", "x" * 5000)]), "answers[0].reason"),
        ("client tools without resumable", lambda c: c.execute("return 1", tools=[ASK_REVIEWER]), "tools"),
        ("on_approval not callable", lambda c: c.run("return 1", on_approval=True), "on_approval"),
        ("bad require_approval", lambda c: c.execute("return 1", require_approval=["no such"]), "require_approval[0]"),
        ("a run tool without handler", lambda c: c.run("return 1", tools=[ASK_REVIEWER]), "tools[0].handler"),
    ],
)
def test_refused_before_sending(dc: Client, name: str, call, path: str) -> None:
    with pytest.raises(InvalidRequestError) as exc:
        call(dc)
    assert exc.value.path == path


def test_pause_limits_and_require_approval(dc: Client) -> None:
    res = dc.execute(
        "return (await tools.get_expenses({member_id: 'sal-01', quarter: 'Q2'})).length",
        resumable=True,
        require_approval=["get_expenses"],
        limits={"max_pauses": 3, "max_paused_time": 60},
    )
    assert res.pending_actions[0].tool == "get_expenses"
    assert (res.effective_limits.max_pauses, res.effective_limits.max_paused_time) == (3, 60)
    assert isinstance(dc.resume(res.continuation, [Answer.approved(res.pending_actions[0])]).value, int)


def test_list_tools_reports_the_tools_the_configuration_gates(dc: Client) -> None:
    listed = dc.list_tools(include_typescript=True)
    assert [t.name for t in listed.tools if t.requires_approval] == ["get_budget_by_level"]
    assert "Each call waits for approval" in listed.typescript


def test_approvals_in_run(dc: Client) -> None:
    seen: list[tuple[PendingAction, ApprovalContext]] = []

    def approve(action: PendingAction, ctx: ApprovalContext) -> bool:
        seen.append((action, ctx))
        return True

    assert dc.run(BUDGET_JS, execution_id="appr-1", on_approval=approve).value == {"ok": True, "limit": 3000}
    ((a, ctx),) = seen
    assert (a.tool, a.approval, a.arguments, a.idempotency_key) == ("get_budget_by_level", True, {"level": "senior"}, f"appr-1/{a.seq}")
    assert isinstance(ctx.ended, threading.Event) and ctx.ended.is_set()  # the run is over

    denied = dc.run(BUDGET_JS, on_approval=lambda a: (False, "not during the audit"))
    assert denied.value == {"ok": False, "code": "denied", "message": "not during the audit"}
    none = dc.run(BUDGET_JS)
    assert none.value == {"ok": False, "code": "denied", "message": "this client has no approval callback (on_approval)"}


def test_failing_and_odd_callbacks_deny(dc: Client) -> None:
    def boom(a: PendingAction) -> bool:
        raise RuntimeError("policy service down")

    assert dc.run(BUDGET_JS, on_approval=boom).value == {"ok": False, "code": "denied", "message": "the approval callback failed: policy service down"}
    assert dc.run(BUDGET_JS, on_approval=lambda a: "yes").value["code"] == "denied"
    msg = dc.run(BUDGET_JS, on_approval=lambda a: (False, "é" * 3000)).value["message"]
    assert len(msg.encode()) <= 4096 and msg.endswith("…")

    async def later(a: PendingAction) -> tuple[bool, str]:
        await asyncio.sleep(0)
        return (False, "async says no")

    assert dc.run(BUDGET_JS, on_approval=later).value["message"] == "async says no"


ODD_DECISIONS = [
    ("the string yes", "yes"),
    ("the string True", "True"),
    ("the number 1", 1),
    ("None", None),
    ("a list", [True, ""]),
    ("an empty tuple", ()),
    ("a one-item tuple", (True,)),
    ("a three-item tuple", (True, "", "scope")),
    ("approved the string true", ("true", "")),
    ("approved 1", (1, "")),
    ("a reason that is not a str", (True, 5)),
    ("a dict", {"approved": True}),
]
ODD_DENIAL = {"ok": False, "code": "denied", "message": "the approval callback returned neither a bool nor an (approved, reason) pair"}


@pytest.mark.parametrize("name,decision", ODD_DECISIONS)
def test_only_true_approves(dc: Client, name: str, decision: object) -> None:
    assert dc.run(BUDGET_JS, on_approval=lambda a: decision).value == ODD_DENIAL


def test_only_true_approves_asyncio(durable_server: Ptcd) -> None:
    async def main() -> None:
        async with AsyncClient(durable_server.addr) as c:
            for name, decision in ODD_DECISIONS:

                async def decide(a: PendingAction, d: object = decision) -> object:
                    return d

                assert (await c.run(BUDGET_JS, on_approval=decide)).value == ODD_DENIAL, name
            assert (await c.run(BUDGET_JS, on_approval=lambda a: (True, "fine"))).value == {"ok": True, "limit": 3000}

    asyncio.run(main())


def test_calls_started_together_are_each_decided_once(dc: Client) -> None:
    decisions: list[str] = []
    lock = threading.Lock()

    def decide(a: PendingAction):
        with lock:
            decisions.append(a.arguments["level"])
        return a.arguments["level"] != "staff" or (False, "no")

    note = ClientTool("note", lambda args: args)
    res = dc.run(
        """
        const levels = ["junior", "senior", "staff"];
        const out = await Promise.allSettled(levels.map((level) => tools.get_budget_by_level({level})));
        const note = await tools.note({n: out.length});
        return {out: out.map((o) => o.status === "fulfilled" ? o.value.travel_limit : o.reason.code), note};""",
        tools=[note],
        on_approval=decide,
    )
    assert res.value == {"out": [1500, 3000, "denied"], "note": {"n": 3}}, res.error
    assert sorted(decisions) == ["junior", "senior", "staff"]


def test_asyncio(durable_server: Ptcd) -> None:
    async def main() -> None:
        async with AsyncClient(durable_server.addr) as c:
            res = await c.execute(REVIEW_JS, resumable=True, tools=[ASK_REVIEWER])
            ask = res.pending_actions[0]
            second = await c.resume(res.continuation, [Answer.with_output(ask, {"member_id": "sal-04"})])
            done = await c.resume(second.continuation, [Answer.denied(second.pending_actions[0], "not now")])
            assert done.value == {"id": "sal-04", "code": "denied", "message": "not now"}
            with pytest.raises(ContinuationError) as exc:
                await c.resume(second.continuation, [Answer.approved(second.pending_actions[0])])
            assert exc.value.kind == "USED"

            async def approve(a: PendingAction, ctx: ApprovalContext) -> tuple[bool, str]:
                await asyncio.sleep(0)
                return (a.arguments["level"] == "senior", "only seniors")

            out = await c.run(BUDGET_JS, on_approval=approve)
            assert out.value == {"ok": True, "limit": 3000}
            out = await c.run(BUDGET_JS, on_approval=lambda a: (False, "sync says no"))
            assert out.value["message"] == "sync says no"
            out = await c.run(BUDGET_JS)
            assert out.value["code"] == "denied"

    asyncio.run(main())


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.run("return 1", resumable=True),
        lambda c: c.execute("return 1", on_approval=lambda a: True),
    ],
    ids=["resumable run", "on_approval in execute"],
)
def test_options_a_method_does_not_take_are_type_errors(dc: Client, call) -> None:
    # Each option is a typed keyword parameter: a type checker refuses these
    # calls, and Python raises TypeError naming the keyword.
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        call(dc)
