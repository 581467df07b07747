// Package wire owns every conversion between ptc's one request model
// (internal/core, internal/fault, internal/limits, tools) and the ptc.v1
// protobuf messages, in both directions: requests, results, limits, errors
// and gRPC statuses, logs, trace records, tool definitions, Session tool
// calls and results, and ListTools. The client (root package) and the
// server (internal/server) convert only through it.
//
// Limits are converted by walking the limits table (limits.Fields) over
// the ptc.v1.Limits descriptor, so a new limit needs no code here.
//
// It imports core packages and ptc.v1 (and so gRPC); engines never import
// it.
package wire
