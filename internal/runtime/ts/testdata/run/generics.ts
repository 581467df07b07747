// want: {"first":"a","pair":[1,"x"],"box":42,"max":9}
function first<T>(xs: T[]): T | undefined {
  return xs[0];
}
function pair<A, B>(a: A, b: B): [A, B] {
  return [a, b];
}
class Box<T extends number> {
  constructor(public readonly value: T) {}
  map<U extends number>(f: (v: T) => U): Box<U> {
    return new Box(f(this.value));
  }
}
const max = <T,>(xs: T[], cmp: (a: T, b: T) => number): T => xs.reduce((m, x) => (cmp(x, m) > 0 ? x : m));
return {
  first: first<string>(["a", "b"]),
  pair: pair(1, "x"),
  box: new Box(41).map((v) => v + 1).value,
  max: max([3, 9, 2], (a, b) => a - b),
};
