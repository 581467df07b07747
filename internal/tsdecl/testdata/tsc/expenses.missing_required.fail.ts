// expect: TS2741
return await tools.get_expenses({ employee_id: "e1" });
