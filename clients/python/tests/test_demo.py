"""The expense example with the demo tools served by the server and by the client."""

from __future__ import annotations

from collections import Counter

from conftest import REPO
from demo import demo_tools


def test_expenses_with_server_tools(demo, expenses_js, expected):
    res = demo.execute(expenses_js)
    assert res.ok, res.error
    assert res.value == expected
    assert res.stats.tool_calls == 26
    assert res.stats.tool_result_bytes > 200_000
    assert "5 of 20 members over their travel budget" in res.logs[0].message
    assert res.for_model() == res.result_json


def test_expenses_typescript_with_server_tools(demo, expected):
    res = demo.execute((REPO / "examples/expenses.ts").read_text(), language="typescript")
    assert res.unwrap() == expected


def test_expenses_with_server_tools_over_a_session(demo, expenses_js, expected):
    assert demo.run(expenses_js).value == expected


def test_expenses_with_client_tools(plain, expenses_js, expected):
    calls: Counter[str] = Counter()
    res = plain.run(expenses_js, tools=demo_tools(calls))
    assert res.ok, res.error
    assert res.value == expected
    assert calls == {"get_team_members": 1, "get_expenses": 20, "get_budget_by_level": 5}
    assert all(r.ok for r in res.trace)


def test_client_demo_tools_are_defined_as_the_servers(demo):
    server = {t.name: t for t in demo.list_tools().tools}
    for t in demo_tools():
        s = server[t.name]
        assert t.description == s.description
        assert t.input_schema == s.input_schema
        assert t.output_schema == s.output_schema
