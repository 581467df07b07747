// Total approved travel expenses per team member for Q3, most expensive first.
const members = await tools.get_team_members({ team_id: "platform" });
const results = await Promise.all(
  members.map(async (m) => {
    try {
      const page = await tools.get_expenses({ employee_id: m.id, quarter: "Q3", year: 2026, category: "travel" });
      const total = page.items.filter((i) => i.approved).reduce((sum, i) => sum + i.amount, 0);
      return { name: m.name, role: m.role, total, more: page.next_page !== null };
    } catch (e) {
      const err = e as PtcToolError;
      console.warn("expenses failed", err.tool, err.code, err.message);
      if (err.name === "ToolArgumentError" && err.errors) {
        console.error(err.errors.map((v) => `${v.path}: ${v.message}`).join("; "));
      }
      return { name: m.name, role: m.role, total: 0, error: err.code };
    }
  }),
);
await tools.ping();
results.sort((a, b) => b.total - a.total);
return results.slice(0, 5);
