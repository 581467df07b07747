// Package ipc is the transport between a supervisor and one worker
// process. Its benchmarks measure the physical floor of a round trip
// between two processes on the host (BenchmarkFloor).
package ipc
