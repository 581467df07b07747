const shape = { kind: "circle", radius: 2 } as const;
const out = await tools.combine({
  any_of: 3,
  one_of_objects: shape,
  all_of: { id: "x", tags: ["t"] },
  nullable_string: null,
  type_list: 7,
  const_number: 42,
  const_object: { a: true, b: [1, "two", null] },
  enum_mixed: null,
});
const area = shape.kind === "circle" ? Math.PI * shape.radius ** 2 : 0;
return { area, out: out ?? "none" };
