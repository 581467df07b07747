// want: {"seen":[1,2,3],"total":6,"echoed":[{"page":0},{"page":1}]}
async function* pages(n: number): AsyncGenerator<number, void, unknown> {
  for (let i = 0; i < n; i++) {
    const r = (await tools.echo({ page: i })) as { page: number };
    yield r.page + 1;
  }
}
const seen: number[] = [];
for await (const v of pages(3)) {
  seen.push(v);
}
const echoed: unknown[] = [];
for await (const r of [tools.echo({ page: 0 }), tools.echo({ page: 1 })]) {
  echoed.push(r);
}
return { seen, total: seen.reduce((a, b) => a + b, 0), echoed };
