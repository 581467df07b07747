# Who on a team spent more on travel this quarter than their level allows?
#
# The canonical programmatic tool calling example, in Python: the script
# fetches every member's expense line items (about 2,000 of them, 200 KB of
# JSON, for the engineering team) and returns only the handful of people
# over budget. It does what examples/expenses.js does.
#
# Input (optional): {"department": "engineering", "quarter": "Q3"}.
# Result: [{id, name, level, travel_total, travel_limit, over_by}], largest
# overspend first, amounts in USD rounded to cents.
import asyncio

params = input or {}
department = params.get("department", "engineering")
quarter = params.get("quarter", "Q3")

team = await tools.get_team_members(department=department)

# Every member's expenses at once: the calls run concurrently.
expenses = await asyncio.gather(
    *(tools.get_expenses(member_id=member["id"], quarter=quarter) for member in team)
)

# One budget lookup per distinct level.
levels = sorted({member["level"] for member in team})
budgets = await asyncio.gather(*(tools.get_budget_by_level(level=level) for level in levels))


# Work in whole cents so that the sums are exact.
def to_cents(amount):
    return int(amount * 100 + (0.5 if amount >= 0 else -0.5))


def dollars(cents):
    # Whole amounts print as integers, as JSON numbers from JavaScript do.
    return cents // 100 if cents % 100 == 0 else cents / 100


limit_cents = {b["level"]: to_cents(b["travel_limit"]) for b in budgets}

over = []
for member, items in zip(team, expenses):
    travel = sum(to_cents(item["amount"]) for item in items if item["category"] == "travel")
    limit = limit_cents[member["level"]]
    if travel > limit:
        over.append({
            "id": member["id"],
            "name": member["name"],
            "level": member["level"],
            "travel_total": dollars(travel),
            "travel_limit": dollars(limit),
            "over_by": dollars(travel - limit),
        })

over.sort(key=lambda person: (-person["over_by"], person["id"]))

items = sum(len(lines) for lines in expenses)
print(f"{department} {quarter}: {len(over)} of {len(team)} members over their travel budget ({items} line items checked)")
return over
