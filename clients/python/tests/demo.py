"""The demo company of tools/demo (Go), ported so that the tests can serve
the same three tools from the client: get_team_members, get_expenses and
get_budget_by_level. The data comes from the same fixed-seed generator
(SplitMix64 seeded by FNV-1a), draw for draw, so the expense example gives
the same result whichever side serves the tools. The tests check the
definitions against the server's (ListTools) and the example's result
against examples/expenses.expected.json."""

from __future__ import annotations

import asyncio
import datetime
from collections import Counter
from typing import Any

from ptc_client import ClientTool, ToolError

YEAR = 2026
SEED_TAG = "ptc-demo-company/v2"
DEPARTMENTS = ["engineering", "sales", "marketing", "support"]
LEVELS = ["junior", "mid", "senior", "staff", "principal"]
TRAVEL_LIMITS = [150000, 200000, 300000, 400000, 500000]  # cents per quarter, by level
OTHER_CATEGORIES = [
    ("meals", 35, 800, 9500),
    ("lodging", 10, 8900, 42000),
    ("software", 15, 900, 49900),
    ("hardware", 5, 2500, 189900),
    ("training", 5, 4900, 129900),
    ("office", 20, 300, 12000),
    ("communications", 10, 1500, 9000),
]
QUARTERS = ["Q1", "Q2", "Q3", "Q4"]
ROSTER = [
    ("engineering", "eng-01", "Ada Okafor", 4), ("engineering", "eng-02", "Bruno Silva", 3),
    ("engineering", "eng-03", "Chen Wei", 2), ("engineering", "eng-04", "Dana Kowalski", 1),
    ("engineering", "eng-05", "Elif Yilmaz", 0), ("engineering", "eng-06", "Farid Haddad", 2),
    ("engineering", "eng-07", "Grace Mensah", 1), ("engineering", "eng-08", "Hiro Tanaka", 3),
    ("engineering", "eng-09", "Ines Moreau", 1), ("engineering", "eng-10", "Jonas Berg", 0),
    ("engineering", "eng-11", "Kavya Rao", 2), ("engineering", "eng-12", "Liam O'Brien", 1),
    ("engineering", "eng-13", "Maya Cohen", 4), ("engineering", "eng-14", "Nikolai Petrov", 2),
    ("engineering", "eng-15", "Olivia Grant", 0), ("engineering", "eng-16", "Pablo Ortega", 1),
    ("engineering", "eng-17", "Quinn Harper", 3), ("engineering", "eng-18", "Rosa Jiménez", 1),
    ("engineering", "eng-19", "Samir Khan", 2), ("engineering", "eng-20", "Tara Lindqvist", 0),
    ("sales", "sal-01", "Uma Patel", 2), ("sales", "sal-02", "Victor Lemaire", 1),
    ("sales", "sal-03", "Wendy Zhao", 0), ("sales", "sal-04", "Xavier Dubois", 3),
    ("sales", "sal-05", "Yara Nasser", 1), ("sales", "sal-06", "Zoe Adams", 0),
    ("sales", "sal-07", "Amir Farouk", 2), ("sales", "sal-08", "Beatriz Costa", 4),
    ("marketing", "mkt-01", "Caleb Novak", 2), ("marketing", "mkt-02", "Daria Ivanova", 1),
    ("marketing", "mkt-03", "Emeka Obi", 0), ("marketing", "mkt-04", "Freya Nilsson", 3),
    ("marketing", "mkt-05", "Gabriel Santos", 1), ("marketing", "mkt-06", "Hana Sato", 0),
    ("support", "sup-01", "Isaac Levy", 1), ("support", "sup-02", "Julia Becker", 0),
    ("support", "sup-03", "Kofi Asante", 2), ("support", "sup-04", "Lena Fischer", 0),
    ("support", "sup-05", "Mateo Rossi", 1), ("support", "sup-06", "Nadia Rahman", 3),
    ("support", "sup-07", "Oscar Eriksson", 0),
]

MASK = (1 << 64) - 1


class Rng:
    """SplitMix64, seeded with the FNV-1a hash of a key, as in tools/demo."""

    def __init__(self, key: str) -> None:
        h = 0xCBF29CE484222325
        for b in key.encode():
            h = ((h ^ b) * 0x100000001B3) & MASK
        self.s = h

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def intn(self, n: int) -> int:
        return self.next() % n


def _split(r: Rng, total: int, n: int) -> list[int]:
    weights = [20 + r.intn(81) for _ in range(n)]
    s = sum(weights)
    parts = [total * w // s for w in weights]
    parts[-1] += total - sum(parts)
    return parts


def generate_expenses(dept: str, member_id: str, level: int, q: int) -> list[dict[str, Any]]:
    r = Rng(f"{SEED_TAG}/{member_id}/{QUARTERS[q]}")
    n = 20 + r.intn(16)
    if dept == "engineering":
        n = 90 + r.intn(21)
    limit = TRAVEL_LIMITS[level]
    permille = 1030 + r.intn(571) if r.intn(100) < 20 else 300 + r.intn(671)
    travel_total = limit * permille // 1000 + r.intn(1000)
    n_travel = n * 15 // 100 + r.intn(5)
    items = [("travel", c) for c in _split(r, travel_total, n_travel)]
    total_weight = sum(c[1] for c in OTHER_CATEGORIES)
    while len(items) < n:
        w = r.intn(total_weight)
        for name, weight, lo, hi in OTHER_CATEGORIES:
            if w < weight:
                items.append((name, lo + r.intn(hi - lo + 1)))
                break
            w -= weight
    first = datetime.date(YEAR, 3 * q + 1, 1)
    nxt = datetime.date(YEAR + (q == 3), (3 * q + 3) % 12 + 1, 1)
    days = (nxt - first).days
    day = [r.intn(days) for _ in items]
    order = sorted(range(len(items)), key=lambda i: day[i])  # stable
    return [
        {
            "id": f"exp-{member_id}-q{q + 1}-{pos + 1:03d}",
            "date": (first + datetime.timedelta(days=day[i])).isoformat(),
            "category": items[i][0],
            "amount": items[i][1] / 100,
            "currency": "USD",
        }
        for pos, i in enumerate(order)
    ]


_LEVEL_ENUM = {"type": "string", "enum": LEVELS}
SCHEMAS = {
    "team_members_input": {
        "type": "object",
        "properties": {"department": {"type": "string", "enum": DEPARTMENTS, "description": "The department whose members to list."}},
        "required": ["department"],
        "additionalProperties": False,
    },
    "team_members_output": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z]{3}-[0-9]{2}$", "description": "The member id, e.g. eng-07."},
                "name": {"type": "string", "minLength": 1},
                "level": _LEVEL_ENUM,
            },
            "required": ["id", "name", "level"],
            "additionalProperties": False,
        },
    },
    "expenses_input": {
        "type": "object",
        "properties": {
            "member_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "A member id returned by get_team_members, e.g. eng-07."},
            "quarter": {"type": "string", "enum": QUARTERS, "description": "The quarter of 2026."},
        },
        "required": ["member_id", "quarter"],
        "additionalProperties": False,
    },
    "expenses_output": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "date": {"type": "string", "pattern": "^2026-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$", "description": "The date of the expense, YYYY-MM-DD."},
                "category": {"type": "string", "enum": ["travel", "meals", "lodging", "software", "hardware", "training", "office", "communications"]},
                "amount": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01, "description": "The amount, with two decimals."},
                "currency": {"type": "string", "enum": ["USD"]},
            },
            "required": ["id", "date", "category", "amount", "currency"],
            "additionalProperties": False,
        },
    },
    "budget_input": {
        "type": "object",
        "properties": {"level": {"type": "string", "enum": LEVELS, "description": "The job level."}},
        "required": ["level"],
        "additionalProperties": False,
    },
    "budget_output": {
        "type": "object",
        "properties": {
            "level": _LEVEL_ENUM,
            "travel_limit": {"type": "number", "minimum": 0, "multipleOf": 0.01, "description": "The travel budget per member per quarter, in USD."},
        },
        "required": ["level", "travel_limit"],
        "additionalProperties": False,
    },
}


def _team_members(args: dict[str, Any]) -> list[dict[str, Any]]:
    dept = args["department"]
    if dept not in DEPARTMENTS:
        raise ToolError("invalid_arguments", f"unknown department {dept!r}: use one of {', '.join(DEPARTMENTS)}")
    return [{"id": i, "name": n, "level": LEVELS[lv]} for d, i, n, lv in sorted(ROSTER, key=lambda m: m[1]) if d == dept]


def _expenses(args: dict[str, Any]) -> list[dict[str, Any]]:
    if args["quarter"] not in QUARTERS:
        raise ToolError("invalid_arguments", f"unknown quarter {args['quarter']!r}: use one of {', '.join(QUARTERS)}")
    for dept, member_id, _, level in ROSTER:
        if member_id == args["member_id"]:
            return generate_expenses(dept, member_id, level, QUARTERS.index(args["quarter"]))
    raise ToolError("not_found", f"no team member has id {args['member_id'][:64]!r}: use an id returned by get_team_members")


def _budget(args: dict[str, Any]) -> dict[str, Any]:
    level = args["level"]
    if level not in LEVELS:
        raise ToolError("invalid_arguments", f"unknown level {level!r}: use one of {', '.join(LEVELS)}")
    return {"level": level, "travel_limit": TRAVEL_LIMITS[LEVELS.index(level)] / 100}


_DESCRIPTIONS = {
    "get_team_members": "List the members of a department: [{id, name, level}], sorted by id. "
    "Departments: engineering, sales, marketing, support.",
    "get_expenses": "List a member's expense line items for a quarter of 2026: "
    "[{id, date, category, amount, currency}], in date order. Amounts are in USD. "
    "Fails with code not_found for an unknown member id.",
    "get_budget_by_level": "Get the budget of a job level: {level, travel_limit}, where travel_limit is "
    "the travel budget per member per quarter in USD.",
}
_IMPLS = {"get_team_members": _team_members, "get_expenses": _expenses, "get_budget_by_level": _budget}
_SCHEMA_KEYS = {
    "get_team_members": "team_members",
    "get_expenses": "expenses",
    "get_budget_by_level": "budget",
}


def demo_tools(calls: Counter[str] | None = None, *, use_async: bool = False) -> list[ClientTool]:
    """demo_tools returns the demo tools as client tools (with async
    handlers when use_async); calls counts handler invocations by tool."""
    counter = calls if calls is not None else Counter()

    def make(name: str) -> Any:
        impl = _IMPLS[name]
        if use_async:
            async def handler(args: dict[str, Any]) -> Any:
                counter[name] += 1
                await asyncio.sleep(0)
                return impl(args)
        else:
            def handler(args: dict[str, Any]) -> Any:
                counter[name] += 1
                return impl(args)
        return handler

    return [
        ClientTool(
            name=name,
            description=_DESCRIPTIONS[name],
            input_schema=SCHEMAS[_SCHEMA_KEYS[name] + "_input"],
            output_schema=SCHEMAS[_SCHEMA_KEYS[name] + "_output"],
            handler=make(name),
        )
        for name in ("get_team_members", "get_expenses", "get_budget_by_level")
    ]
