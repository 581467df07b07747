const out = await tools.edge({ "": true, "quote\"d": "q", "new\nline": "n", "emoji 👍": "👍", class: "c", 123: 4, "aa/b": "s" });
const r = await tools.a$b["c-d"]({ x: "1" });
return { a: out.a, b: out.b, c: out.c, r };
