// expect: TS2353
return await tools.get_expenses({ employee_id: "e1", quarter: "Q1", region: "emea" });
