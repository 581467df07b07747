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

/**
 * Connected is what a call knows, when it fails, of whether its request
 * could have reached the server: the channel was connected when the call
 * started, or connected while it ran.
 */
export interface Connected {
  /** reached reports whether the channel was connected at some time since the call started. */
  reached(): boolean;
}

/** Transport makes RunnerService calls on one channel. */
export class Transport {
  private readonly client: grpc.Client;
  /** readyEpoch counts the channel's transitions into READY (see watch). */
  private readyEpoch = 0;

  constructor(target: string, credentials: grpc.ChannelCredentials, options: grpc.ClientOptions) {
    this.client = new grpc.Client(target, credentials, options);
    this.watch(this.client.getChannel().getConnectivityState(false));
  }

  /**
   * watch counts the channel's transitions into READY. The watcher lives
   * as long as the channel: grpc-js calls it on each state change (it
   * sets no timer, so it keeps no process alive) and it re-registers
   * itself until the channel shuts down.
   */
  private watch(state: grpc.connectivityState): void {
    if (state === grpc.connectivityState.SHUTDOWN) return;
    const channel = this.client.getChannel();
    try {
      channel.watchConnectivityState(state, Infinity, () => {
        const next = channel.getConnectivityState(false);
        if (next === grpc.connectivityState.READY) this.readyEpoch++;
        this.watch(next);
      });
    } catch {
      // The channel is shut down: nothing more to watch.
    }
  }

  /** connected starts following whether a call's request could have reached the server. */
  connected(): Connected {
    const channel = this.client.getChannel();
    const epoch = this.readyEpoch;
    const readyAtStart = channel.getConnectivityState(false) === grpc.connectivityState.READY;
    return { reached: () => readyAtStart || this.readyEpoch > epoch };
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
