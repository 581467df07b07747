// Find open bugs, look up the repository, and announce them.
const [found, repo] = await Promise.all([
  tools.github.search_issues({ query: "label:bug", state: "open", limit: 20 }),
  tools.github.repos.get({ owner: "ptcrun", repo: "ptc" }),
]);
const titles = found.issues.filter((i) => i.labels.includes("p1")).map((i) => `#${i.number} ${i.title}`);
const posted = await tools.slack.post_message({ channel: "#triage", text: titles.join("\n") });
const events = await tools.calendar["list-events"]({ from: "2026-01-01T00:00:00Z", to: "2026-01-08T00:00:00Z" });
await tools.delete({ id: "tmp" });
await tools.x.y();
await tools.x_y({ anything: true });
await tools.ptc({ v: "1" });
return { total: found.total, stars: repo.stars, branch: repo.default_branch, ts: posted.ts, events };
