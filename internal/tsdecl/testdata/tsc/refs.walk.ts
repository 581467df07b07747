// Walk a recursive tree and count its nodes.
type Node = { value: string; children?: Node[] };
const tree: Node = { value: "root", children: [{ value: "a" }, { value: "b", children: [{ value: "c" }] }] };
const out = await tools.tree({ root: tree, point: { x: 1, y: 2 }, old_style: { v: 1 }, json: { a: [1, "x", null, { b: false }] } });
function count(n: Node): number {
  return 1 + (n.children ?? []).reduce((s, c) => s + count(c), 0);
}
const flat: string[] = [];
const visit = (o: typeof out): void => {
  if (typeof o === "string") flat.push(o);
  else o.forEach(visit);
};
visit(out);
await tools.array({ b: "AAAA" });
return { nodes: count(tree), flat };
