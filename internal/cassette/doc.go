// Package cassette records one execution as a versioned JSONL file — the
// request, every tool call with its arguments and answer, and the final
// result — and replays it: a Replayer answers each tool call from the
// recording without calling any tool, and reports the first point where a
// new run diverges from the recording (a call with other arguments, an
// extra call, a missing call, or another result).
//
// The format is documented in docs/testing.md. Reading is strict: unknown
// fields, a version other than 1, out-of-order calls and oversized lines are
// errors that name the line.
//
// The package also holds the JSON value helpers that recording, replay and
// test fixtures share: Equal (comparison as JSON values, not bytes),
// Contains (argument subsets) and Diff (a compact path-by-path difference).
//
// It builds on the root package ptc and must not be imported by it.
package cassette
