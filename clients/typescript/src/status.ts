// The reason of a request error: ptcd attaches a google.rpc.ErrorInfo
// (domain "ptc.v1") to the errors callers branch on, in the status
// details trailer. Decoded here by hand (three small messages) so that the
// package needs no googleapis code.

import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type * as grpc from "@grpc/grpc-js";

/** reasonDomain is the ErrorInfo domain of ptc's reasons. */
const reasonDomain = "ptc.v1";
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo";

/** fields reads a message's length-delimited fields (the only kind needed), skipping the rest. */
function fields(b: Uint8Array): Array<[number, Uint8Array]> {
  const r = new BinaryReader(b);
  const out: Array<[number, Uint8Array]> = [];
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (wt === WireType.LengthDelimited) out.push([no, r.bytes()]);
    else r.skip(wt, no);
  }
  return out;
}

const text = new TextDecoder();

/**
 * reasonOf returns the ptc reason of a failed call ("" when there is
 * none, or the details cannot be read): google.rpc.Status.details (3) →
 * Any {type_url (1), value (2)} → ErrorInfo {reason (1), domain (2)}.
 */
export function reasonOf(err: { metadata?: grpc.Metadata } | undefined): string {
  const raw = err?.metadata?.get("grpc-status-details-bin")?.[0];
  if (!(raw instanceof Uint8Array)) return "";
  try {
    for (const [no, any] of fields(raw)) {
      if (no !== 3) continue;
      const parts = fields(any);
      const typeUrl = parts.find(([n]) => n === 1)?.[1];
      const value = parts.find(([n]) => n === 2)?.[1];
      if (!typeUrl || !value || text.decode(typeUrl) !== errorInfoType) continue;
      const info = fields(value);
      const reason = info.find(([n]) => n === 1)?.[1];
      const domain = info.find(([n]) => n === 2)?.[1];
      if (reason && domain && text.decode(domain) === reasonDomain) return text.decode(reason);
    }
  } catch {
    // Unreadable details: no reason.
  }
  return "";
}
