const out = await tools.shapes({
  plain: "p",
  "with-dash": 1,
  "2fast": true,
  $ok: "ok",
  "héllo": "h",
  closed: { a: "a" },
  closed_empty: {},
  open_empty: { anything: [1, 2] },
  map_of_numbers: { a: 1, b: 2 },
  map_with_props: { id: "i", count: 2, extra: true },
  patterned: { "x-a": "s", "n-b": 3 },
  extra_required: { a: "a", b: 2, c: 3 },
  nested: { deeper: { deepest: [{ leaf: "l" }] } },
});
return Object.entries(out).map(([k, v]) => `${k}=${v.join(",")}`);
