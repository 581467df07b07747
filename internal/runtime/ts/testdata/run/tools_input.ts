// want: {"dept":"eng","echo":{"q":"eng"},"nested":{"query":"bug"},"all":[{"i":1},{"i":2}]}
interface Input { department: string }
const { department } = input as Input;
const echo = await tools.echo({ q: department });
const nested = await tools.github.search({ query: "bug" });
const all = await Promise.all([1, 2].map((i) => tools.echo({ i })));
console.log("done", all.length);
return { dept: department, echo, nested, all };
