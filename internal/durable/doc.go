// Package durable turns a paused execution into a continuation and back:
// the State of a paused execution (its request, what it used, its
// journal), its encoding (internal/durableproto, compressed), the token
// that carries it — encrypted (AES-256-CTR) and signed (HMAC-SHA256) with
// a key named by its id so keys can rotate, bound to a tenant, expiring,
// unique by its pause id — and the stores that hold states too large for
// a token and remember which continuations were used (each resumes once):
// in memory (per process), in one file (bbolt) or in Redis (shared by
// replicas).
//
// docs/durable.md describes the format and its security. Package durable
// imports internal/core, internal/fault, internal/limits and tools, never
// the engines, the bridge or gRPC.
package durable
