// Package runtime defines what every engine implements: an Engine runs one
// Job — a script, its input, its limits and a bridge.Caller for its tools —
// and returns an Outcome. Engines live in sub-packages (runtime/js on goja,
// runtime/wasm on wazero); none of them imports gRPC.
package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ptcrun/ptc/bridge"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// Job is one execution as an engine sees it.
type Job struct {
	// ExecutionID identifies the execution.
	ExecutionID string
	// Language names the script's language for engines that run several
	// ("javascript", "typescript"; empty means JavaScript).
	Language string
	// Source is the script text (JavaScript engines).
	Source string
	// Module is the WebAssembly module (WASM engine).
	Module []byte
	// Input is the JSON input value; empty means null.
	Input json.RawMessage
	// Limits are the effective limits (already resolved and clamped).
	Limits limits.Limits
	// Tools is the bridge to the execution's tools.
	Tools bridge.Caller
	// Logs receives console output; nil discards it.
	Logs *LogBuffer
	// Deterministic makes randomness and time reproducible: Math.random
	// (or the guest's random source) is seeded with Seed, and the clock is
	// virtual, starting at ClockStart and advancing 1 ms per reading.
	Deterministic bool
	// Seed seeds the random source when Deterministic is set.
	Seed uint64
	// ClockStart is the virtual clock's start when Deterministic is set.
	ClockStart time.Time
}

// VirtualClockStep is how far the virtual clock advances per reading.
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

// LogEntry is one line of console output.
type LogEntry struct {
	// Level is "log", "info", "warn", "error" or "debug".
	Level string
	// Message is the formatted text.
	Message string
	// At is the time since the execution started.
	At time.Duration
}

// LogBuffer collects an execution's logs up to a byte cap. It is safe for
// concurrent use.
type LogBuffer struct {
	mu        sync.Mutex
	start     time.Time
	max       int64
	used      int64
	entries   []LogEntry
	truncated bool
	live      func(LogEntry)
}

// NewLogBuffer returns a buffer that keeps at most maxBytes of messages.
// live, when not nil, is also called with each kept entry as it is written.
func NewLogBuffer(start time.Time, maxBytes int64, live func(LogEntry)) *LogBuffer {
	return &LogBuffer{start: start, max: maxBytes, live: live}
}

// Write adds a log line; a line that does not fit is cut at the cap and the
// buffer is marked truncated. It reports whether anything was kept.
func (b *LogBuffer) Write(level, msg string) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	if b.truncated {
		b.mu.Unlock()
		return false
	}
	room := b.max - b.used
	if int64(len(msg)) > room {
		b.truncated = true
		if room <= 0 {
			b.mu.Unlock()
			return false
		}
		msg = cutUTF8(msg, int(room))
	}
	e := LogEntry{Level: level, Message: msg, At: time.Since(b.start)}
	b.used += int64(len(msg))
	b.entries = append(b.entries, e)
	live := b.live
	b.mu.Unlock()
	if live != nil {
		live(e)
	}
	return true
}

// Entries returns the kept entries and whether any output was dropped.
func (b *LogBuffer) Entries() ([]LogEntry, bool) {
	if b == nil {
		return nil, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]LogEntry(nil), b.entries...), b.truncated
}

// Bytes returns the message bytes kept so far.
func (b *LogBuffer) Bytes() int64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
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
