// An MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in the root package.json), driven by ptc's acceptance tests: it
// connects over stdio or streamable HTTP as the plan says, lists the tools,
// runs the plan's calls and prints a JSON report on stdout. Assertions stay
// in the Go tests.
//
//   node ts-client.mjs plan.json
//
// plan: {
//   transport: "stdio" | "http",
//   command, args, env      (stdio: the server to start)
//   url, token              (http)
//   expectConnectError      (true: report the connection error and stop)
//   steps: [{name, tool, arguments, progress}]
// }
//
// Progress is recorded as it comes off the wire, not through callTool's
// onprogress: the SDK dispatches a notification on a later microtask but
// a response at once, so when a read brings the notifications and the
// answer together the answer retires the handler first and every
// notification is reported as "an unknown token" (typescript-sdk issue
// 2580). The wire order is what the server controls; sdkProgress counts
// what onprogress delivered, lateProgress what came after the answer.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { steps: {} };

function transport() {
  if (plan.transport === "stdio") {
    return new StdioClientTransport({ command: plan.command, args: plan.args ?? [], env: { ...process.env, ...(plan.env ?? {}) }, stderr: "inherit" });
  }
  const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
  return new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
}

// wire watches one transport: the progress token of the call in flight,
// and the notifications for it in arrival order.
const wire = { token: undefined, answered: false, progress: [], late: [] };

function watch(t) {
  const send = t.send.bind(t);
  t.send = (message, options) => {
    if (message.method === "tools/call") {
      wire.token = message.params?._meta?.progressToken;
      wire.id = message.id;
      wire.answered = false;
      wire.progress = [];
      wire.late = [];
    }
    return send(message, options);
  };
  // Protocol.connect keeps this handler and calls it first, synchronously,
  // for every message in the order read.
  t.onmessage = (message) => {
    if (message.method === "notifications/progress") {
      const { progressToken, ...p } = message.params ?? {};
      if (wire.token !== undefined && progressToken === wire.token) {
        (wire.answered ? wire.late : wire.progress).push(p);
      } else {
        wire.late.push({ ...p, progressToken });
      }
    } else if (message.id !== undefined && message.id === wire.id && message.method === undefined) {
      wire.answered = true;
    }
  };
  return t;
}

const client = new Client({ name: "ptc-ts-acceptance", version: "1.0.0" }, { capabilities: {} });
try {
  await client.connect(watch(transport()));
} catch (err) {
  report.connectError = String(err?.message ?? err);
  console.log(JSON.stringify(report));
  process.exit(plan.expectConnectError ? 0 : 1);
}
if (plan.expectConnectError) {
  report.connectError = null;
  console.log(JSON.stringify(report));
  await client.close();
  process.exit(1);
}

report.serverVersion = client.getServerVersion();
report.protocolInstructions = client.getInstructions() ?? "";
const { tools } = await client.listTools();
report.tools = tools.map((t) => ({ name: t.name, description: t.description, bytes: JSON.stringify(t).length }));

for (const step of plan.steps ?? []) {
  const out = { progress: [], sdkProgress: 0 };
  try {
    const opts = step.progress ? { onprogress: () => out.sdkProgress++ } : {};
    const res = await client.callTool({ name: step.tool, arguments: step.arguments }, undefined, opts);
    out.isError = res.isError ?? false;
    out.text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
    out.structuredContent = res.structuredContent ?? null;
    out.meta = res._meta ?? null;
    out.progress = wire.progress;
    out.lateProgress = wire.late;
  } catch (err) {
    out.error = String(err?.message ?? err);
  }
  report.steps[step.name] = out;
}

await client.close();
console.log(JSON.stringify(report));
