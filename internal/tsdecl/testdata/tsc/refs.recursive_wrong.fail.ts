// expect: TS2322
return await tools.tree({ root: { value: "r", children: [{ value: 1 }] } });
