// The client's Limits against the contract: every field of the proto's
// Limits message (read from the generated descriptor) is mapped, with the
// right kind, and survives a round trip. A limit added to
// proto/ptc/v1/runner.proto and not to this client fails here.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ScalarType } from "@bufbuild/protobuf";
import { Client, InvalidRequestError } from "@ptcrun/client";

const { limitFields, limitsPB, limitsFromPB, checkLimits } = await import("../src/limits.js");
const { LimitsSchema, ExecuteResponseSchema, ExecutionStatsSchema, ToolProgressSchema } = await import("../src/gen/ptc/v1/runner_pb.js");
const { resultFromPB } = await import("../src/result.js");
const { progressFromPB } = await import("../src/progress.js");
const { create } = await import("@bufbuild/protobuf");

type Field = { key: string; kind: "duration" | "int32" | "int64" };
const mapped = limitFields as Record<string, Field>;

describe("Limits drift against proto/ptc/v1/runner.proto", () => {
  test("every field of the proto's Limits is mapped, with its kind", () => {
    const missing: string[] = [];
    for (const f of LimitsSchema.fields) {
      const m = mapped[f.localName];
      if (m === undefined) {
        missing.push(`${f.name} (field ${f.number})`);
        continue;
      }
      let kind: string;
      if (f.fieldKind === "message") kind = f.message.typeName === "google.protobuf.Duration" ? "duration" : f.message.typeName;
      else if (f.fieldKind === "scalar") kind = f.scalar === ScalarType.INT32 ? "int32" : f.scalar === ScalarType.INT64 ? "int64" : ScalarType[f.scalar];
      else kind = f.fieldKind;
      assert.equal(m.kind, kind, `limits field ${f.name} is ${kind}, the client maps it as ${m.kind}`);
    }
    assert.deepEqual(missing, [], `the client's Limits does not map: ${missing.join(", ")} (add them to clients/typescript/src/limits.ts)`);
  });

  test("the client maps no field the proto does not have", () => {
    const proto = new Set(LimitsSchema.fields.map((f) => f.localName));
    assert.deepEqual(Object.keys(mapped).filter((k) => !proto.has(k)), []);
  });

  test("every limit survives a round trip through the wire message", () => {
    const limits: Record<string, number> = {};
    let i = 1;
    for (const f of Object.values(mapped)) limits[f.key] = f.kind === "duration" ? 1000 * i++ + 250 : i++;
    checkLimits(limits);
    const pb = limitsPB(limits) as unknown as Record<string, unknown>;
    for (const f of LimitsSchema.fields) assert.notEqual(pb[f.localName], undefined, `${f.name} not set`);
    assert.deepEqual(limitsFromPB(limitsPB(limits)), limits);
  });
});

describe("limit checks", () => {
  const client = new Client("127.0.0.1:1"); // never dialled
  const cases: Array<{ name: string; limits: Record<string, unknown>; path: string; message: RegExp }> = [
    { name: "maxLogEntries over 32 bits", limits: { maxLogEntries: 2 ** 31 }, path: "limits.maxLogEntries", message: /32 bits/ },
    { name: "maxResultTokens fractional", limits: { maxResultTokens: 1.5 }, path: "limits.maxResultTokens", message: /integer/ },
    { name: "maxResultTokens negative", limits: { maxResultTokens: -1 }, path: "limits.maxResultTokens", message: /non-negative/ },
    { name: "unknown limit", limits: { maxLogLines: 3 }, path: "limits.maxLogLines", message: /unknown limit.*maxLogEntries/ },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      await assert.rejects(client.execute({ source: "return 1", limits: c.limits }), (e: unknown) => {
        assert.ok(e instanceof InvalidRequestError, `want InvalidRequestError, got ${e}`);
        assert.equal(e.path, c.path);
        assert.match(e.message, c.message);
        return true;
      });
    });
  }

  test("an unknown overflow policy is refused", async () => {
    await assert.rejects(client.execute({ source: "return 1", overflow: "drop" as never }), (e: unknown) => e instanceof InvalidRequestError && e.path === "overflow");
  });

  test("onProgress must be a function", async () => {
    await assert.rejects(client.run({ source: "return 1", onProgress: 5 as never }), (e: unknown) => e instanceof InvalidRequestError && e.path === "onProgress");
  });
});

// Stats and progress events follow one naming rule: the proto field's
// protobuf-es name, with "Ms" added for a Duration (in milliseconds).
describe("Stats and ProgressEvent drift against proto/ptc/v1/runner.proto", () => {
  // every sets each field of a message to a value that is not its zero.
  const every = (schema: typeof ExecutionStatsSchema | typeof ToolProgressSchema): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const f of schema.fields) {
      if (f.fieldKind === "message") out[f.localName] = { seconds: 1n, nanos: 0 };
      else if (f.fieldKind === "enum") out[f.localName] = 2; // ToolProgress.Phase FINISHED
      else if (f.fieldKind === "scalar") out[f.localName] = f.scalar === ScalarType.BOOL ? true : f.scalar === ScalarType.STRING ? "x" : f.scalar === ScalarType.INT64 ? 2n : 2;
    }
    return out;
  };
  const cases = [
    { name: "ExecutionStats → Stats", schema: ExecutionStatsSchema,
      converted: resultFromPB(create(ExecuteResponseSchema, { stats: every(ExecutionStatsSchema) })).stats as unknown as Record<string, unknown> },
    { name: "ToolProgress → ProgressEvent", schema: ToolProgressSchema,
      converted: progressFromPB(create(ToolProgressSchema, every(ToolProgressSchema))) as unknown as Record<string, unknown> },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const keys = c.schema.fields.map((f) => (f.fieldKind === "message" && f.message.typeName === "google.protobuf.Duration" ? f.localName + "Ms" : f.localName));
      const missing = keys.filter((k) => !(k in c.converted));
      assert.deepEqual(missing, [], `the client does not expose ${missing.join(", ")}`);
      const dropped = keys.filter((k) => !c.converted[k]);
      assert.deepEqual(dropped, [], `the client drops ${dropped.join(", ")}`);
    });
  }
});
