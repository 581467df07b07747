// expect: TS2322
return await tools.get_expenses({ employee_id: "e1", quarter: "Q5" });
