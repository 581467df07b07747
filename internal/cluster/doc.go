// Package cluster is what ptcd replicas sharing a store tell each other
// beyond continuations: which replica holds a paused execution in memory
// (Owners, so that a Resume reaching another replica is forwarded to it),
// and each tenant's request rate and running executions across replicas
// (Quota). Both live in the shared Redis server of the continuation store
// (internal/durable), under their own keys.
//
// Package cluster knows nothing of gRPC, the executor or the server; it
// must not import them.
package cluster
