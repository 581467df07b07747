// The reason of a request error, read from the status details trailer of
// whatever a server sends: a stand-in server (no ptcd) answers Resume with
// crafted, foreign and garbage details. A reason is trusted only in ptc's
// ErrorInfo domain; unreadable details never throw.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import { Answer, Client, ContinuationError, RequestError } from "@ptcrun/client";

// The stand-in answers with the status in `next`.
let next: { code: grpc.status; details: string; trailer?: Uint8Array } = { code: grpc.status.INTERNAL, details: "" };
let server: grpc.Server;
let client: Client;

function errorInfo(reason: string, domain: string): Uint8Array {
  const info = new BinaryWriter().tag(1, 2).string(reason).tag(2, 2).string(domain).finish();
  const any = new BinaryWriter().tag(1, 2).string("type.googleapis.com/google.rpc.ErrorInfo").tag(2, 2).bytes(info).finish();
  return new BinaryWriter().tag(1, 0).int32(9).tag(2, 2).string("msg").tag(3, 2).bytes(any).finish();
}

before(async () => {
  server = new grpc.Server();
  const raw = (b: Buffer) => b;
  server.addService({
    resume: {
      path: "/ptc.v1.RunnerService/Resume",
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: raw,
      responseDeserialize: raw,
    },
  }, {
    resume: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => {
      const metadata = new grpc.Metadata();
      if (next.trailer) metadata.set("grpc-status-details-bin", Buffer.from(next.trailer));
      cb({ code: next.code, details: next.details, metadata });
    },
  });
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  client = new Client(`127.0.0.1:${port}`);
});
after(() => {
  client?.close();
  server?.forceShutdown();
});

test("reasons are read from ptc's ErrorInfo only, and garbage is harmless", async () => {
  const cases: Array<{ name: string; trailer?: Uint8Array; continuation?: string; reason: string }> = [
    { name: "used", trailer: errorInfo("CONTINUATION_USED", "ptc.v1"), continuation: "USED", reason: "CONTINUATION_USED" },
    { name: "a future kind", trailer: errorInfo("CONTINUATION_REVOKED", "ptc.v1"), continuation: "REVOKED", reason: "CONTINUATION_REVOKED" },
    { name: "answers", trailer: errorInfo("ANSWERS_INVALID", "ptc.v1"), reason: "ANSWERS_INVALID" },
    { name: "another domain", trailer: errorInfo("CONTINUATION_USED", "example.com"), reason: "" },
    { name: "no details", reason: "" },
    { name: "empty details", trailer: new Uint8Array(), reason: "" },
    { name: "truncated", trailer: errorInfo("CONTINUATION_USED", "ptc.v1").subarray(0, 20), reason: "" },
  ];
  for (let i = 0; i < 200; i++) cases.push({ name: `random ${i}`, trailer: randomBytes(1 + (i % 64)), reason: "" });
  for (const c of cases) {
    next = { code: grpc.status.FAILED_PRECONDITION, details: c.name, trailer: c.trailer };
    await assert.rejects(client.resume("tok", [Answer.approve("c1")]), (e: unknown) => {
      assert.ok(e instanceof RequestError, `${c.name}: ${String(e)}`);
      assert.equal(e.code, grpc.status.FAILED_PRECONDITION, c.name);
      if (c.name.startsWith("random")) return true; // any reason a random message spells is fine; it must not throw
      assert.equal(e.reason, c.reason, c.name);
      assert.equal(e instanceof ContinuationError, c.continuation !== undefined, c.name);
      if (c.continuation) assert.equal((e as ContinuationError).kind, c.continuation, c.name);
      return true;
    });
  }
});

