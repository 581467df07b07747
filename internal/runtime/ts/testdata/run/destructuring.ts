// want: {"a":1,"b":2,"rest":{"c":3,"d":4},"x":10,"tail":[30,40],"def":"fallback","deep":"z","swapped":[2,1]}
const { a, b, ...rest }: { a: number; b: number; c: number; d: number } = { a: 1, b: 2, c: 3, d: 4 };
const [x, , ...tail]: number[] = [10, 20, 30, 40];
const { missing: def = "fallback" }: { missing?: string } = {};
const { inner: { deeper: [deep] } } = { inner: { deeper: ["z"] } };
let p = 1, q = 2;
[p, q] = [q, p];
function take({ n = 0, ...others }: { n?: number; [k: string]: unknown }): number {
  return n + Object.keys(others).length;
}
take({ n: 1, y: 2 });
return { a, b, rest, x, tail, def, deep, swapped: [p, q] };
