// The gRPC transport: RunnerService's methods on @grpc/grpc-js,
// with messages (de)serialised by the protobuf-es generated schemas.

import { fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  ListToolsRequestSchema,
  ListToolsResponseSchema,
  ResumeRequestSchema,
  ResumeResponseSchema,
  RunnerService,
  SessionRequestSchema,
  SessionResponseSchema,
  type ExecuteRequest,
  type ExecuteResponse,
  type ListToolsRequest,
  type ListToolsResponse,
  type ResumeRequest,
  type ResumeResponse,
  type SessionRequest,
  type SessionResponse,
} from "./gen/ptc/v1/runner_pb.js";

function serializer<D extends DescMessage>(schema: D): (m: MessageShape<D>) => Buffer {
  return (m) => {
    const b = toBinary(schema, m);
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  };
}

function deserializer<D extends DescMessage>(schema: D): (b: Buffer) => MessageShape<D> {
  return (b) => fromBinary(schema, b);
}

const path = (method: string) => `/${RunnerService.typeName}/${method}`;

/** SessionCall is one Session stream. */
export type SessionCall = grpc.ClientDuplexStream<SessionRequest, SessionResponse>;

/** Transport makes RunnerService calls on one channel. */
export class Transport {
  private readonly client: grpc.Client;

  constructor(target: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) {
    this.client = new grpc.Client(target, credentials, options);
  }

  execute(req: ExecuteRequest, md: grpc.Metadata, opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: ExecuteResponse) => void): grpc.ClientUnaryCall {
    return this.client.makeUnaryRequest(path(RunnerService.method.execute.name),
      serializer(ExecuteRequestSchema), deserializer(ExecuteResponseSchema), req, md, opts, cb);
  }

  resume(req: ResumeRequest, md: grpc.Metadata, opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: ResumeResponse) => void): grpc.ClientUnaryCall {
    return this.client.makeUnaryRequest(path(RunnerService.method.resume.name),
      serializer(ResumeRequestSchema), deserializer(ResumeResponseSchema), req, md, opts, cb);
  }

  listTools(req: ListToolsRequest, md: grpc.Metadata, opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: ListToolsResponse) => void): grpc.ClientUnaryCall {
    return this.client.makeUnaryRequest(path(RunnerService.method.listTools.name),
      serializer(ListToolsRequestSchema), deserializer(ListToolsResponseSchema), req, md, opts, cb);
  }

  session(md: grpc.Metadata, opts: grpc.CallOptions): SessionCall {
    return this.client.makeBidiStreamRequest(path(RunnerService.method.session.name),
      serializer(SessionRequestSchema), deserializer(SessionResponseSchema), md, opts);
  }

  close(): void {
    this.client.close();
  }
}
