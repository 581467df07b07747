const out = await tools.arrays({
  strings: ["a"],
  pair: ["a", 1],
  head_tail: ["h", true, false],
  draft7_tuple: ["x"],
  optional_tuple: [],
  matrix: [[1, 2], [3]],
  mixed: ["a", 1],
  unique: ["a", "b"],
});
return out.map((o) => (typeof o === "string" ? o : o.n));
