// Tests that need no server: strict JSON, schema checks, tool definition
// checks and request conversion.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import {
  Client,
  InvalidRequestError,
  NotJSONError,
  requiresAction,
  toJSONStrict,
  type ClientTool,
  type CompletedResult,
  type Result,
} from "@ptcrun/client";

describe("toJSONStrict", () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const shared = { x: 1 };
  const cases: Array<{ name: string; value: unknown; json?: string; path?: string }> = [
    { name: "object", value: { a: [1, "b", null, true] }, json: '{"a":[1,"b",null,true]}' },
    { name: "undefined property omitted", value: { a: undefined, b: 1 }, json: '{"b":1}' },
    { name: "date via toJSON", value: { d: new Date(0) }, json: '{"d":"1970-01-01T00:00:00.000Z"}' },
    { name: "shared, not cyclic", value: [shared, shared], json: '[{"x":1},{"x":1}]' },
    { name: "top-level undefined", value: undefined, path: "" },
    { name: "bigint", value: { n: 1n }, path: "/n" },
    { name: "function", value: [1, () => 1], path: "/1" },
    { name: "symbol", value: { s: Symbol("s") }, path: "/s" },
    { name: "NaN", value: { a: { b: NaN } }, path: "/a/b" },
    { name: "Infinity", value: [Infinity], path: "/0" },
    { name: "Map", value: { m: new Map() }, path: "/m" },
    { name: "Set", value: new Set([1]), path: "" },
    { name: "cycle", value: cyclic, path: "/self" },
  ];
  for (const c of cases) {
    test(c.name, () => {
      if (c.json !== undefined) {
        assert.equal(toJSONStrict(c.value), c.json);
        return;
      }
      assert.throws(() => toJSONStrict(c.value), (e: unknown) => e instanceof NotJSONError && e.path === c.path);
    });
  }
});

describe("client-side checks refuse bad requests before anything is sent", () => {
  // The address is never dialled: every case fails before a call starts.
  const client = new Client("127.0.0.1:1");
  const handler = () => null;
  const tool = (t: Partial<ClientTool>): ClientTool => ({ name: "t", handler, ...t }) as ClientTool;
  const cases: Array<{ name: string; tools?: ClientTool[]; extra?: Record<string, unknown>; path: string; message: RegExp }> = [
    { name: "invalid type name", tools: [tool({ inputSchema: { type: "object", properties: { a: { type: "strng" } } } })], path: "tools[0].inputSchema.properties.a.type", message: /not a JSON Schema type/ },
    { name: "schema not an object", tools: [tool({ inputSchema: "object" as never })], path: "tools[0].inputSchema", message: /object or a boolean/ },
    { name: "required not a list", tools: [tool({ inputSchema: { type: "object", required: "a" } })], path: "tools[0].inputSchema.required", message: /array of property names/ },
    { name: "negative minLength", tools: [tool({ outputSchema: { type: "string", minLength: -1 } })], path: "tools[0].outputSchema.minLength", message: /non-negative integer/ },
    { name: "bad pattern", tools: [tool({ inputSchema: { type: "string", pattern: "(" } })], path: "tools[0].inputSchema.pattern", message: /not a regular expression/ },
    { name: "external $ref", tools: [tool({ inputSchema: { $ref: "https://example.com/s.json" } })], path: "tools[0].inputSchema.$ref", message: /external \$ref/ },
    { name: "items as tuple", tools: [tool({ inputSchema: { type: "array", items: [{ type: "string" }] } })], path: "tools[0].inputSchema.items", message: /prefixItems/ },
    { name: "schema with a function", tools: [tool({ inputSchema: { type: "object", default: () => 1 } })], path: "tools[0].inputSchema/default", message: /not JSON/ },
    { name: "duplicate tool name", tools: [tool({ name: "dup" }), tool({ name: "dup" })], path: "tools[1].name", message: /duplicate tool name "dup"/ },
    { name: "empty tool name", tools: [tool({ name: "" })], path: "tools[0].name", message: /needs a name/ },
    { name: "tool name with a space", tools: [tool({ name: "get weather" })], path: "tools[0].name", message: /invalid/ },
    { name: "reserved tool name", tools: [tool({ name: "x.$search" })], path: "tools[0].name", message: /reserved/ },
    { name: "missing handler", tools: [{ name: "t" } as ClientTool], path: "tools[0].handler", message: /no handler/ },
    { name: "zod 3 style schema", tools: [tool({ inputSchema: { _def: { typeName: "ZodObject" } } as never })], path: "tools[0].inputSchema", message: /Standard JSON Schema/ },
    { name: "zod schema that has no JSON Schema", tools: [tool({ inputSchema: z.object({ when: z.date() }) })], path: "tools[0].inputSchema", message: /cannot be converted/ },
    { name: "input not JSON", extra: { input: { n: 10n } }, path: "input/n", message: /BigInt/ },
    { name: "empty source", extra: { source: "  " }, path: "source", message: /empty/ },
    { name: "bad execution id", extra: { executionId: "has space" }, path: "executionId", message: /128 ASCII/ },
    { name: "unknown limit", extra: { limits: { timeout: 5 } }, path: "limits.timeout", message: /unknown limit/ },
    { name: "negative limit", extra: { limits: { maxToolCalls: -1 } }, path: "limits.maxToolCalls", message: /non-negative/ },
    { name: "bad result schema", extra: { resultSchema: { type: 5 } }, path: "resultSchema.type", message: /not a JSON Schema type/ },
    { name: "bad allowed tool", extra: { allowedTools: ["a b"] }, path: "allowedTools[0]", message: /invalid/ },
    { name: "unknown language", extra: { language: "ruby" }, path: "language", message: /unknown language/ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      await assert.rejects(client.run({ source: "return 1", tools: c.tools, ...c.extra }), (e: unknown) => {
        assert.ok(e instanceof InvalidRequestError, `want InvalidRequestError, got ${e}`);
        assert.equal(e.path, c.path);
        assert.match(e.message, c.message);
        return true;
      });
    });
  }
  test("execute refuses client tools", async () => {
    await assert.rejects(client.execute({ source: "return 1", tools: [tool({})] } as never), InvalidRequestError);
  });
  test("an already aborted signal sends nothing", async () => {
    const ac = new AbortController();
    ac.abort(new Error("stop"));
    await assert.rejects(client.run({ source: "return 1", signal: ac.signal }), { name: "CancelledError" });
    await assert.rejects(client.execute({ source: "return 1", signal: ac.signal }), { name: "CancelledError" });
  });
});

describe("TypeScript declarations of client tools", async () => {
  const { tsType, withClientTools } = await import("../src/tsdecl.js");
  const cases: Array<{ name: string; schema: unknown; ts: string }> = [
    { name: "absent", schema: undefined, ts: "unknown" },
    { name: "false", schema: false, ts: "never" },
    { name: "primitives", schema: { type: ["string", "integer", "null"] }, ts: "string | number | null" },
    { name: "enum", schema: { enum: ["a", 1, null] }, ts: '"a" | 1 | null' },
    { name: "const", schema: { const: "x" }, ts: '"x"' },
    { name: "object", schema: { type: "object", properties: { a: { type: "string" }, "b-c": { type: "boolean" } }, required: ["a"] }, ts: '{ a: string; "b-c"?: boolean }' },
    { name: "open object", schema: { type: "object" }, ts: "Record<string, unknown>" },
    { name: "map", schema: { type: "object", additionalProperties: { type: "number" } }, ts: "{ [key: string]: number }" },
    { name: "array of unions", schema: { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } }, ts: "(string | number)[]" },
    { name: "tuple", schema: { type: "array", prefixItems: [{ type: "string" }], items: false }, ts: "[string]" },
    { name: "allOf", schema: { allOf: [{ type: "object", properties: { a: { type: "string" } } }, { type: "object", properties: { b: { type: "string" } } }] }, ts: "{ a?: string } & { b?: string }" },
  ];
  for (const c of cases) test(c.name, () => assert.equal(tsType(c.schema), c.ts));

  const tool = { name: "crm.find", description: "Find a contact.", inputSchemaJson: '{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}', outputSchemaJson: "" };
  test("inside the server's tools object", () => {
    const out = withClientTools("declare const tools: {\n  a(args: A): Promise<B>;\n};\n", [tool]);
    assert.equal(out, "declare const tools: {\n  crm: {\n    /** Find a contact. */\n    find(args: { q: string }): Promise<unknown>;\n  };\n  a(args: A): Promise<B>;\n};\n");
  });
  test("into an empty tools object", () => {
    assert.equal(withClientTools("declare const tools: {};", [tool]), "declare const tools: {\n  crm: {\n    /** Find a contact. */\n    find(args: { q: string }): Promise<unknown>;\n  };\n};");
  });
});

// The type-level contract: these compile under strict (this file is built
// with tsc --strict before the tests run), and each @ts-expect-error line
// must fail to compile, or the build fails.
describe("types", () => {
  test("a completed result narrows on ok, a paused one with requiresAction", () => {
    const describe = (res: CompletedResult): string => (res.ok ? JSON.stringify(res.value) : `${res.error.kind}: ${res.modelMessage}`);
    const any = (res: Result): string => {
      if (requiresAction(res)) return res.pendingActions.map((a) => a.callId).join(",") + res.continuation;
      return res.ok ? JSON.stringify(res.value) : res.error.kind;
    };
    assert.equal(typeof describe, "function");
    assert.equal(typeof any, "function");
  });

  test("run and execute are typed by resumable", async () => {
    const c = new Client("127.0.0.1:1");
    c.close();
    // @ts-expect-error run refuses resumable (a Session asks onApproval instead)
    await assert.rejects(c.run({ source: "return 1", resumable: true }), InvalidRequestError);
    // A non-resumable execute and run cannot pause: their results narrow on ok alone.
    const onlyCompleted: Array<() => Promise<CompletedResult>> = [
      () => c.execute({ source: "return 1" }),
      () => c.execute({ source: "return 1", resumable: false }),
      () => c.run({ source: "return 1" }),
    ];
    // A resumable one may pause.
    // @ts-expect-error a resumable execute may return a PausedResult
    const notCompleted: () => Promise<CompletedResult> = () => c.execute({ source: "return 1", resumable: true });
    assert.equal(onlyCompleted.length + (typeof notCompleted === "function" ? 1 : 0), 4);
  });
});
