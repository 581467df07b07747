// expect: TS2551
return await tools.search({ q: input.qeury });
