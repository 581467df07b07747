const hits = await tools.search({ q: input.query });
const since = input.filters?.since ?? "1970-01-01";
return { since, top: hits.slice(0, 3) };
