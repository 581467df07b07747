// expect: TS2322
return await tools.combine({ const_number: 41 });
