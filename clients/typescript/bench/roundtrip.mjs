// roundtrip.mjs measures the round trip of a client-served tool call with
// the TypeScript client, the same way as clients/gobench (see there):
//
//   node bench/roundtrip.mjs 127.0.0.1:7878 [calls=2000] [runs=200]
//
// Prints one JSON line. Run `npm run build` first; scripts/bench-clients.sh
// runs the three clients against one ptcd.

import { Client } from "@ptcrun/client";

const [server = "127.0.0.1:7878", callsArg = "2000", runsArg = "200"] = process.argv.slice(2);
const calls = Number(callsArg);
const runs = Number(runsArg);

const callScript = "for (let i = 0; i < input.n; i++) await tools.echo({i}); return input.n";
const runScript = "return await tools.echo({i: input})";

let starts = [];
const echo = {
  name: "echo",
  inputSchema: { type: "object", properties: { i: { type: "integer" } }, required: ["i"] },
  handler: (args) => {
    starts.push(process.hrtime.bigint());
    return args;
  },
};

const client = new Client(server);
const loop = async (n) => {
  starts = [];
  const res = await client.run({ source: callScript, input: { n }, tools: [echo], limits: { maxToolCalls: n + 10, timeoutMs: 300_000 } });
  if (!res.ok) throw res.error;
};
await loop(200); // warm-up
await loop(calls);
const callRTT = [];
for (let i = 1; i < starts.length; i++) callRTT.push(Number(starts[i] - starts[i - 1]) / 1e3);

const runTimes = [];
for (let i = 0; i < runs + 20; i++) {
  const t0 = process.hrtime.bigint();
  const res = await client.run({ source: runScript, input: i, tools: [echo] });
  if (!res.ok) throw res.error;
  if (i >= 20) runTimes.push(Number(process.hrtime.bigint() - t0) / 1e3); // the first 20 warm up
}
client.close();

const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.floor(((a.length - 1) * p) / 100)];
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
const round = (x) => Math.round(x * 1000) / 1000;
console.log(JSON.stringify({
  client: "typescript",
  calls: callRTT.length,
  call_p50_us: round(pct(callRTT, 50)),
  call_p99_us: round(pct(callRTT, 99)),
  call_mean_us: round(mean(callRTT)),
  runs: runTimes.length,
  run_p50_us: round(pct(runTimes, 50)),
  run_mean_us: round(mean(runTimes)),
}));
