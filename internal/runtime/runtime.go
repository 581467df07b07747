// Package runtime defines what every engine implements: an Engine runs one
// Job — a script, its input, its limits, its determinism and a
// bridge.Caller for its tools — and returns an Outcome. Engines live in
// sub-packages (js on goja, ts on it, wasm on wazero, worker isolating js
// in worker processes).
//
// The engines are internal: a Job is made of the request model
// (internal/core, internal/limits, internal/fault), so only ptc's own
// packages can build one. Programs use them through the root package ptc
// (Runner, WithIsolation, RunWorker). The importable package
// github.com/ptcrun/ptc/runtime is the layout's home and documentation for
// them, with no API of its own.
//
// Package runtime and its sub-packages import bridge, tools and internal
// packages; never gRPC (not even through ptc.v1), the root package ptc or
// internal/server. A test over `go list -deps` enforces it.
package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// Job is one execution as an engine sees it: everything a script can see
// is an explicit field — the language, the program, the input, the
// limits, the tool manifest with calls and discovery (Tools), the logs and
// determinism. Its fields are those of the core.Request, resolved (the
// language is set; a deterministic job has its seed and clock start).
type Job struct {
	// ExecutionID identifies the execution.
	ExecutionID string
	// Language is the script's language; unspecified runs as JavaScript.
	Language core.Language
	// Source is the program text (JavaScript and TypeScript engines).
	Source string
	// Module is the WebAssembly module (WASM engine).
	Module []byte
	// ModuleSHA256 is the hex SHA-256 of Module when the caller knows it
	// (an engine need not hash the module again); with an empty Module,
	// the engine must hold the module it names.
	ModuleSHA256 string
	// Input is the JSON input value; empty means null.
	Input json.RawMessage
	// Limits are the effective limits (already resolved and clamped); a
	// zero field means no limit.
	Limits limits.Limits
	// Tools is the bridge to the execution's tools: the tool manifest,
	// the calls and discovery.
	Tools bridge.Caller
	// Logs receives console output; nil discards it.
	Logs *LogBuffer
	// Determinism, when Deterministic is set, seeds the random source and
	// gives the script a virtual clock.
	core.Determinism
	// Idle is set for a resumable execution (and nil otherwise): the
	// engine calls it, on the script's goroutine, each time the script
	// waits with nothing to run — inflight calls started and not yet
	// delivered to it, cpu the compute time used so far — and then waits
	// for a completion (or for ctx). It lets the bridge order completions
	// and notice a pause (bridge.Dispatcher.Idle). Engines never call
	// tools inline in a resumable execution (Tools.Inline says no).
	Idle func(inflight int, cpu time.Duration)
}

// VirtualClockStep is how far the virtual clock of a deterministic job
// advances per reading.
const VirtualClockStep = time.Millisecond

// Outcome is what an engine returns.
type Outcome struct {
	// Result is the JSON text of the script's return value (undefined
	// becomes null). Empty when Err is set.
	Result json.RawMessage
	// Err is the classified failure, nil on success.
	Err *fault.Error
	// CPUTime is the best measure the engine has of its own compute time.
	CPUTime time.Duration
	// PeakMemoryBytes is the best measure of peak memory, 0 if unknown.
	PeakMemoryBytes int64
}

// Engine runs jobs. Run must return when ctx is done (with a
// KindCancelled or KindTimeout error) and must never panic.
type Engine interface {
	Run(ctx context.Context, job *Job) *Outcome
}

// LogBuffer collects an execution's logs within its limits: every entry
// costs limits.LogEntryOverhead bytes plus its text against MaxLogBytes, so
// that empty entries are not free, and there are at most MaxLogEntries.
// Whatever is written to it, it holds no more. It is safe for concurrent
// use.
type LogBuffer struct {
	mu        sync.Mutex
	start     time.Time
	maxBytes  int64
	maxCount  int64
	used      int64
	text      int64
	entries   []core.LogEntry
	truncated bool
	live      func(core.LogEntry)
	// skip is the number of first entries a resumed execution kept
	// before: written again by its re-run, neither returned nor sent live.
	skip int
}

// NewLogBuffer returns a buffer bounded by the log limits of l (a zero
// limit means none). live, when not nil, is also called with each kept
// entry as it is written.
func NewLogBuffer(start time.Time, l limits.Limits, live func(core.LogEntry)) *LogBuffer {
	return &LogBuffer{start: start, maxBytes: l.MaxLogBytes, maxCount: int64(l.MaxLogEntries), live: live}
}

// Write adds a log line; a line that does not fit is cut at the cap (or
// dropped when not even its overhead fits) and the buffer is marked
// truncated, after which every write is dropped. It reports whether
// anything was kept.
func (b *LogBuffer) Write(level, msg string) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	if b.truncated {
		b.mu.Unlock()
		return false
	}
	if b.maxCount > 0 && int64(len(b.entries)) >= b.maxCount {
		b.truncated = true
		b.mu.Unlock()
		return false
	}
	cost := int64(len(msg)) + limits.LogEntryOverhead
	if b.maxBytes > 0 && cost > b.maxBytes-b.used {
		b.truncated = true
		room := b.maxBytes - b.used - limits.LogEntryOverhead
		if room <= 0 {
			b.mu.Unlock()
			return false
		}
		msg = cutUTF8(msg, int(room))
		cost = int64(len(msg)) + limits.LogEntryOverhead
	}
	e := core.LogEntry{Level: level, Message: msg, At: time.Since(b.start)}
	b.used += cost
	b.text += int64(len(msg))
	b.entries = append(b.entries, e)
	live := b.live
	if len(b.entries) <= b.skip {
		live = nil
	}
	b.mu.Unlock()
	if live != nil {
		live(e)
	}
	return true
}

// Entries returns the kept entries (past the skipped ones) and whether
// any output was dropped.
func (b *LogBuffer) Entries() ([]core.LogEntry, bool) {
	if b == nil {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.skip >= len(b.entries) {
		return nil, b.truncated
	}
	return append([]core.LogEntry(nil), b.entries[b.skip:]...), b.truncated
}

// Skip hides the first n entries from Entries and from the live
// function: a resumed execution's re-run writes again what it returned
// before its pause (they still count against the limits).
func (b *LogBuffer) Skip(n int) {
	b.mu.Lock()
	b.skip = n
	b.mu.Unlock()
}

// SetLive replaces the function that receives each kept entry (nil for
// none).
func (b *LogBuffer) SetLive(live func(core.LogEntry)) {
	b.mu.Lock()
	b.live = live
	b.mu.Unlock()
}

// Count returns the number of entries kept, skipped ones included.
func (b *LogBuffer) Count() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.entries)
}

// Bytes returns the message bytes kept so far (the text, without the
// per-entry overhead).
func (b *LogBuffer) Bytes() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text
}

// Truncate marks the buffer truncated: output was dropped elsewhere (in a
// worker process) and nothing more is kept.
func (b *LogBuffer) Truncate() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.truncated = true
	b.mu.Unlock()
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Full reports whether the buffer has dropped output (so callers can skip
// formatting more).
func (b *LogBuffer) Full() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truncated
}
