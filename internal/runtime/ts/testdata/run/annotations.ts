// want: {"sum":6,"label":"total: 6","flags":[true,false]}
const values: number[] = [1, 2, 3];
let label: string;
function add(a: number, b: number): number {
  return a + b;
}
const sum: number = values.reduce((acc: number, v: number): number => add(acc, v), 0);
label = `total: ${sum}`;
const flags: readonly boolean[] = [true, false] as const;
let unused!: unknown;
return { sum, label, flags };
