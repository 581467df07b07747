"""The runnable examples in examples/clients/python, run against a ptcd with
the demo tools."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

EXPECTED = [
    'server tools: {"members":8,"limits":[1500,2000,3000,4000,5000]}',
    'client tool: {"EUR":2760,"GBP":2370,"JPY":"unsupported_currency"}',
    'failed: SCRIPT_ERROR - The script failed with SCRIPT_ERROR at line 1, column 32: uncaught ToolError from tool get_expenses (code not_found): '
    'no team member has id "nobody": use an id returned by get_team_members. Check the arguments and the error of tool '
    "get_expenses; catch tool errors with try/catch (err.code, err.message) if the script can continue without it.",
    "cancelled: CANCELLED",
    'asyncio: {"EUR": 2760, "GBP": 2370, "JPY": "unsupported_currency"}',
]


def test_quickstart(demo_server):
    env = {**os.environ, "PYTHONPATH": str(REPO / "clients/python")}
    out = subprocess.run(
        [sys.executable, str(REPO / "examples/clients/python/quickstart.py"), demo_server.addr],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()
    # Live console lines are best effort; everything else is exact.
    assert [line for line in out if not line.startswith("  [script ")] == EXPECTED
    assert set(line for line in out if line.startswith("  [script ")) <= {"  [script log] senior travel budget 3000"}


DURABLE = [
    "paused: answer tools.ask_reviewer(...)",
    'paused: approve tools.get_budget_by_level({"level":"staff"})',
    'resumed: {"member":"Xavier Dubois","level":"staff","travel_limit":4000}',
    "retried: the same next state: true",
    "reused: USED (FAILED_PRECONDITION)",
    'approvals: {"senior":3000,"principal":"denied: principal budgets are confidential"}',
    'asyncio: {"principal": "denied: principal budgets are confidential", "senior": 3000}',
]


def test_durable(demo_server):
    env = {**os.environ, "PYTHONPATH": str(REPO / "clients/python")}
    out = subprocess.run(
        [sys.executable, str(REPO / "examples/clients/python/durable.py"), demo_server.addr],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()
    assert out == DURABLE
