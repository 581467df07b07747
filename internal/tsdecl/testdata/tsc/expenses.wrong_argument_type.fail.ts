// expect: TS2322
const page = await tools.get_expenses({ employee_id: 42, quarter: "Q1" });
return page.items.length;
