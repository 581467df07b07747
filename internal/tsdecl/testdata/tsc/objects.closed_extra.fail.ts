// expect: TS2353
return await tools.shapes({ plain: "p", "with-dash": 1, closed: { a: "a", b: "b" } });
