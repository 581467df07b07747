// Package adversarial attacks ptcd from the outside, as a hostile caller
// would: it builds the ptcd binary, starts it with the configuration files
// in testdata/ (worker mode, the default, and in-process mode), and talks to
// it only through the gRPC contract (proto/ptc/v1). What it can observe
// besides the answers is what an operator sees: ptcd's log on standard
// error, its liveness, and the memory of ptcd and of its worker processes
// in /proc.
//
// Every case names its family, the modes it runs in, the request (or
// Session conversation), the classification the contract and the hardening
// requirements demand — a gRPC status code, an error kind, or a result —
// and a time bound. After every case a trivial execution must succeed; a
// server that crashed or stopped answering is reported against the case and
// restarted.
//
// A case whose current behaviour is known to be wrong carries a defect
// note: it is skipped, loudly, until the defect is fixed and the note is
// removed. `go test ./internal/adversarial -tags adversarial -run
// TestAdversarial -defects` runs the marked cases too (each on a fresh
// server afterwards) and reports which ones still reproduce and which no
// longer do; `-family bomb` narrows a run to one family.
//
// `go test ./internal/adversarial` runs a fast subset (at least one case of
// every family in both modes); `go test -tags adversarial` runs every case,
// the concurrency bursts, the soak and the chaos test (TestChaos: workers
// and then ptcd killed under load; no orphan, no hang, a restart serves). Each run logs pass/skip/fail counts
// per family and mode (`-v`); TestCaseTable logs the size of the table.
//
// ptcd runs under an RLIMIT_DATA of 8 GiB, so that a server that loses
// control of its memory dies and is reported instead of exhausting a
// shared machine. Where strace is installed and permitted, it watches
// ptcd and its workers for file accesses during executions.
//
// The package holds tests only. It imports nothing of ptc but the generated
// gRPC contract.
package adversarial
