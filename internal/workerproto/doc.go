// Package workerproto holds the Go code generated from
// proto/ptc/worker/v1/worker.proto: the frames between the ptc supervisor and
// its worker processes (package internal/runtime/worker). It is internal: both ends
// are the same binary and the protocol may change in any release.
//
// It imports only the protobuf runtime — no gRPC and no ptc.v1 — so that the
// engines' dependency graph stays free of both.
package workerproto
