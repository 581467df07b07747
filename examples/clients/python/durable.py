"""Durable executions and approvals from Python: a script that pauses where
only the caller can answer — a question to a human, a call that needs
approval — and goes on later from its continuation, with no stream held
open meanwhile; and approvals decided live in a run (sync and asyncio).

Start a server with the demo tools, then run this file (see README.md):

    go run ./cmd/ptcd --listen 127.0.0.1:7878 --demo-tools
    PYTHONPATH=clients/python python3 examples/clients/python/durable.py 127.0.0.1:7878
"""

import asyncio
import json
import sys

from ptc_client import Answer, AsyncClient, Client, ClientTool, ContinuationError, PendingAction

server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7878"

REVIEW = """
  const team = await tools.get_team_members({ department: "sales" });
  const pick = await tools.ask_reviewer({ question: "Whose travel should be reviewed?", options: team.map((m) => m.id) });
  const member = team.find((m) => m.id === pick.member_id);
  try {
    const budget = await tools.get_budget_by_level({ level: member.level });
    return { member: member.name, level: member.level, travel_limit: budget.travel_limit };
  } catch (err) {
    return { member: member.name, refused: err.code + ": " + err.message };
  }"""

# A tool the caller answers itself: in a resumable execution only its
# definition is sent, and a call to it pauses the execution.
ASK_REVIEWER = ClientTool(
    "ask_reviewer",
    description="Ask the human reviewer a question; they pick one of the options.",
    input_schema={"type": "object", "properties": {"question": {"type": "string"}, "options": {"type": "array", "items": {"type": "string"}}}},
    output_schema={"type": "object", "properties": {"member_id": {"type": "string"}}, "required": ["member_id"]},
)

LEVELS = """
  const out = {};
  for (const level of ["senior", "principal"]) {
    try {
      out[level] = (await tools.get_budget_by_level({ level })).travel_limit;
    } catch (err) {
      out[level] = err.code + ": " + err.message;
    }
  }
  return out;"""


def answer(a: PendingAction) -> Answer:
    """answer is what the humans decided for one pending call."""
    short = a.arguments_json if len(a.arguments_json) <= 40 else "..."
    print(f"paused: {'approve' if a.approval else 'answer'} tools.{a.tool}({short})")
    if not a.approval:
        return Answer.with_output(a, {"member_id": "sal-04"})
    return Answer.approved(a) if a.tool == "get_budget_by_level" else Answer.denied(a, "not approved")


def decide(action: PendingAction):
    """decide is an approval policy: True approves; (False, reason) denies."""
    if action.arguments["level"] == "principal":
        return (False, "principal budgets are confidential")
    return True


with Client(server) as client:
    # 1. A resumable execution: it pauses at ask_reviewer (served by the
    #    caller) and at get_budget_by_level (the caller asked to approve
    #    its calls). Each pause returns the pending calls and a
    #    continuation: store it anywhere and resume from any process when
    #    the answers are known.
    res = client.execute(REVIEW, resumable=True, tools=[ASK_REVIEWER], require_approval=["get_budget_by_level"])
    used = []
    while res.requires_action:
        answers = [answer(a) for a in res.pending_actions]
        used.append((res.continuation, answers, res.pending_actions))
        res = client.resume(res.continuation, answers)
    print("resumed:", res.for_model())

    # 2. Retrying a resume is safe: the same continuation with the same
    #    answers returns the same next state (nothing runs again), so a
    #    call cut off loses nothing. With other answers it is refused — a
    #    continuation resumes once — and the error says why (EXPIRED,
    #    USED, TAMPERED, ...).
    retried = client.resume(used[0][0], used[0][1])
    print(f"retried: the same next state: {str(retried.continuation == used[1][0]).lower()}")
    try:
        client.resume(used[0][0], [Answer.with_output(used[0][2][0], {"member_id": "sal-01"})])
    except ContinuationError as e:
        print(f"reused: {e.kind} ({e.code_name})")

    # 3. Approvals while a run holds its stream: on_approval decides each
    #    call that needs approval; a denial rejects the script's call with
    #    a ToolError of code "denied" and the reason.
    res = client.run(LEVELS, require_approval=["get_budget_by_level"], on_approval=decide)
    print("approvals:", res.for_model())


async def main() -> None:
    # The same with asyncio; the callback may be a coroutine function.
    async def decide_async(action: PendingAction):
        return decide(action)

    async with AsyncClient(server) as client:
        res = await client.run(LEVELS, require_approval=["get_budget_by_level"], on_approval=decide_async)
        print("asyncio:", json.dumps(res.value, sort_keys=True))


asyncio.run(main())
