// expect: TS2551
return await tools.get_expense({ employee_id: "e1", quarter: "Q1" });
