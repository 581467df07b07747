"""A harness's view of ptc from Python: run a script against the server's
tools, serve a tool of your own, read live logs, handle a failed script,
cancel a runaway one, and do the same with asyncio.

Start a server with the demo tools, then run this file (see README.md):

    go run ./cmd/ptcd --listen 127.0.0.1:7878 --demo-tools
    PYTHONPATH=clients/python python3 examples/clients/python/quickstart.py 127.0.0.1:7878
"""

import asyncio
import json
import sys

from ptc_client import AsyncClient, CancelledError, Cancellation, Client, ToolError, tool

server = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7878"

RATES = {"EUR": 0.92, "GBP": 0.79}


# A tool served by this process. The server validates the arguments against
# the schema before the handler runs; the result goes back into the script.
@tool(
    name="fx.convert",
    input_schema={
        "type": "object",
        "properties": {"usd": {"type": "number", "minimum": 0}, "currency": {"enum": ["EUR", "GBP", "JPY"]}},
        "required": ["usd", "currency"],
        "additionalProperties": False,
    },
)
def convert(args):
    """Convert an amount of US dollars into another currency."""
    rate = RATES.get(args["currency"])
    if rate is None:
        raise ToolError("unsupported_currency", f"no rate for {args['currency']}")
    return {"amount": round(args["usd"] * rate, 2), "currency": args["currency"]}


CONVERT_BUDGET = """
const budget = await tools.get_budget_by_level({ level: "senior" });
console.log("senior travel budget", budget.travel_limit);
const out = {};
for (const currency of ["EUR", "GBP", "JPY"]) {
  try {
    out[currency] = (await tools.fx.convert({ usd: budget.travel_limit, currency })).amount;
  } catch (err) {
    out[currency] = err.code; // the handler's ToolError code
  }
}
return out;
"""

with Client(server) as client:
    # 1. A script against the server's tools: only its small result comes back.
    team = client.execute(
        """
        const team = await tools.get_team_members({ department: input.department });
        const budgets = await Promise.all(["junior", "mid", "senior", "staff", "principal"]
          .map((level) => tools.get_budget_by_level({ level })));
        return { members: team.length, limits: budgets.map((b) => b.travel_limit) };""",
        input={"department": "sales"},
    )
    print("server tools:", team.for_model())

    # 2. A client tool, with the script's console lines streamed live.
    converted = client.run(CONVERT_BUDGET, tools=[convert], on_log=lambda line: print(f"  [script {line.level}] {line.message}"))
    print("client tool:", converted.for_model())

    # 3. A script that fails is a result with a classified error, and a short
    #    message to give back to the model.
    failed = client.run("return await tools.get_expenses({ member_id: 'nobody', quarter: 'Q3' })")
    print("failed:", failed.error.kind, "-", failed.model_message)

    # 4. Cancellation stops the execution on the server.
    cancel = Cancellation()
    cancel.cancel_after(0.2)
    try:
        client.run("while (true) {}", cancel=cancel)
    except CancelledError as err:
        print("cancelled:", err.result.error.kind if err.result else "CANCELLED")


# 5. The same with asyncio: handlers may be coroutine functions.
async def main() -> None:
    async with AsyncClient(server) as client:
        res = await client.run(CONVERT_BUDGET, tools=[convert])
        print("asyncio:", json.dumps(res.value, sort_keys=True))


asyncio.run(main())
