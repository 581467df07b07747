// An expense review that pauses for its caller: which team member to
// review is asked of the caller (the client tool ask_reviewer), and the
// reminder email needs approval (notify_member requires it). Run it with
// `ptc run examples/durable/review.js --resumable ...` or through Execute
// with resumable set; see docs/durable.md.
//
// Input (optional): {"department": "sales", "quarter": "Q2"}.

const params = input || {};
const department = params.department || "sales";
const quarter = params.quarter || "Q2";

const team = await tools.get_team_members({ department });
// Pause 1: the caller picks a member.
const pick = await tools.ask_reviewer({
  question: `Whose ${quarter} travel should be reviewed?`,
  options: team.map((m) => m.id),
});
const member = team.find((m) => m.id === pick.member_id);
if (!member) {
  return { error: `no member ${pick.member_id} in ${department}` };
}

// Expenses and budget at once (server tools: they run, no pause).
const [items, budget] = await Promise.all([
  tools.get_expenses({ member_id: member.id, quarter }),
  tools.get_budget_by_level({ level: member.level }),
]);
const cents = (x) => Math.round(x * 100);
const travel = items.filter((x) => x.category === "travel").reduce((s, x) => s + cents(x.amount), 0);
const over = travel - cents(budget.travel_limit);
console.log(`${member.name}: ${travel / 100} USD of travel, limit ${budget.travel_limit}`);

// Pause 2: the reminder needs approval; a denial comes back as an error.
let notified = false;
let note = "within budget";
if (over > 0) {
  try {
    await tools.notify_member({ member_id: member.id, over_by: over / 100 });
    notified = true;
    note = "reminder sent";
  } catch (e) {
    if (e.code !== "denied") throw e;
    note = `reminder denied: ${e.message}`;
  }
}
return { id: member.id, name: member.name, travel: travel / 100, limit: budget.travel_limit, over_by: Math.max(over, 0) / 100, notified, note };
