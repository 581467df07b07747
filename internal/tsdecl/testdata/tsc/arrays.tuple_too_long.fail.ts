// expect: TS2322
return await tools.arrays({ strings: [], pair: ["a", 1, 2] });
