package js_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestResultStopsAtOutputLimit: the return value is serialised only up to
// max_output_bytes. A value whose JSON is far larger than the heap it
// takes (shared references, a long string repeated, doubling nesting)
// ends as OUTPUT_LIMIT once its text passes the limit, without the engine
// building the rest: the error's Observed is what had been reached, a
// little past the limit, and the engine allocated about the limit, not
// the whole text.
func TestResultStopsAtOutputLimit(t *testing.T) {
	const max = 1 << 20
	cases := []struct {
		name  string
		src   string
		whole int64 // the size of the whole text, for the record
		slack int64 // how far past the limit Observed may be
	}{
		{"one array referenced 200,000 times", `const a = new Array(1000).fill(0); return new Array(200000).fill(a)`, 400_200_001, 8},
		{"a long string repeated", `const s = "x".repeat(1 << 20); return new Array(400).fill(s)`, 400 << 20, 1<<20 + 2},
		{"doubling nesting", `let a = [1, 2, 3, 4, 5, 6, 7, 8]; for (let i = 0; i < 24; i++) a = [a, a]; return a`, 300 << 20, 8},
		{"objects sharing a string value", `const s = "é".repeat(1 << 16); const o = {}; for (let i = 0; i < 4000; i++) o["k" + i] = s; return o`, 500 << 20, 2<<16 + 16},
		{"one string past the limit", `return "x".repeat(4 << 20)`, 4<<20 + 2, 4<<20 + 2},
	}
	e := js.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			out, _, _ := run(t, e, tc.src, runOpts{limits: limits.Limits{MaxOutputBytes: max, MemoryBytes: 256 << 20}})
			runtime.ReadMemStats(&after)
			if out.Err == nil || out.Err.Kind != fault.KindOutputLimit {
				t.Fatalf("outcome %v, want OUTPUT_LIMIT", out.Err)
			}
			if out.Err.Limit != max || out.Err.Observed <= max || out.Err.Observed > max+tc.slack {
				t.Fatalf("limit %d observed %d, want %d and (%d, %d]", out.Err.Limit, out.Err.Observed, max, max, max+tc.slack)
			}
			if !strings.Contains(out.Err.Message, "at least") || out.Result != nil {
				t.Fatalf("message %q, result %d bytes", out.Err.Message, len(out.Result))
			}
			// The script's own data is a few MiB; the whole text would be
			// hundreds. Allocation counts are process-wide (other tests may
			// allocate meanwhile), hence the wide bound.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
				t.Fatalf("the execution allocated %d MiB for a text of %d MiB cut at %d MiB", alloc>>20, tc.whole>>20, max>>20)
			}
		})
	}
}

// TestResultAtOutputLimit: a result of exactly max_output_bytes is whole,
// and one whose properties without a JSON representation would pass the
// limit (their names are taken back) is not refused.
func TestResultAtOutputLimit(t *testing.T) {
	cases := []struct {
		name, src, want string
		max             int64
	}{
		{"exactly the limit", `return "x".repeat(8)`, `"xxxxxxxx"`, 10},
		{"array exactly the limit", `return [1, 22, 333]`, `[1,22,333]`, 10},
		{"one byte over", `return [1, 22, 3333]`, "", 10},
		{"names without values taken back", `return {a: 1, ["b".repeat(100)]: undefined, c: () => 1}`, `{"a":1}`, 7},
		{"escapes counted", `return "\n\n\n\n"`, "", 9},
		{"unicode counted in bytes", `return "éé"`, `"éé"`, 6},
		{"unicode past the limit", `return "ééé"`, "", 7},
		{"no representation is null", `return () => 1`, `null`, 4},
		{"toJSON's value is what counts", `return {toJSON() { return "x".repeat(100) }}`, "", 50},
	}
	e := js.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{limits: limits.Limits{MaxOutputBytes: tc.max}})
			if tc.want == "" {
				if out.Err == nil || out.Err.Kind != fault.KindOutputLimit || out.Err.Observed <= tc.max {
					t.Fatalf("outcome %v, result %s: want OUTPUT_LIMIT past %d", out.Err, out.Result, tc.max)
				}
				return
			}
			if out.Err != nil || string(out.Result) != tc.want {
				t.Fatalf("outcome %v, result %s, want %s", out.Err, out.Result, tc.want)
			}
		})
	}
}

// TestResultPastMemoryLimit: a result's text is memory the execution
// holds. With the overflow policy truncate a result may be 64 MiB
// whatever memory_bytes says; a text that would need more than the
// memory limit ends MEMORY_LIMIT, with the limit and the bytes it would
// have needed, before its buffer grows past the limit.
func TestResultPastMemoryLimit(t *testing.T) {
	const memory = 8 << 20
	out, _, _ := run(t, js.New(), `const a = new Array(1000).fill(0); return new Array(8000).fill(a)`,
		runOpts{limits: limits.Limits{MaxOutputBytes: 64 << 20, MemoryBytes: memory}})
	if out.Err == nil || out.Err.Kind != fault.KindMemoryLimit || out.Err.Limit != memory || out.Err.Observed <= memory || out.Result != nil {
		t.Fatalf("outcome %+v", out.Err)
	}
	if !strings.Contains(out.Err.Message, "memory limit") {
		t.Fatalf("message %q", out.Err.Message)
	}
}

// TestSerialisingRunsOutOfTime: serialising a value can take far longer
// than its text suggests — here 20,000 references to one object of
// 20,000 properties without a JSON representation, 400 million
// properties visited for 120 KB of text — in native code the VM's
// interrupt does not reach. The serialisation looks at the clock as it
// goes: a result, or a JSON.stringify inside the script (caught or not),
// ends with the limit that ran out, TIMEOUT or CPU_LIMIT, instead of
// running on to its own end.
func TestSerialisingRunsOutOfTime(t *testing.T) {
	const wide = `const o = {}; for (let i = 0; i < 20000; i++) o["k" + i] = undefined; const b = new Array(20000).fill(o);`
	timeout := limits.Limits{Timeout: 200 * time.Millisecond}
	cpu := limits.Limits{CPUTime: 200 * time.Millisecond, Timeout: time.Hour}
	cases := []struct {
		name string
		src  string
		lim  limits.Limits
		want fault.Kind
	}{
		{"result past the timeout", wide + `return b`, timeout, fault.KindTimeout},
		{"result past the CPU time", wide + `return b`, cpu, fault.KindCPULimit},
		{"stringify past the timeout", wide + `return JSON.stringify(b).length`, timeout, fault.KindTimeout},
		{"stringify past the CPU time", wide + `return JSON.stringify(b).length`, cpu, fault.KindCPULimit},
		{"stringify caught, again and again", wide + `for (;;) { try { JSON.stringify(b) } catch (e) {} }`, timeout, fault.KindTimeout},
	}
	e := js.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, _ := run(t, e, tc.src, runOpts{limits: tc.lim})
			if out.Err == nil || out.Err.Kind != tc.want || out.Result != nil {
				t.Fatalf("outcome %v, result %d bytes; want %v", out.Err, len(out.Result), tc.want)
			}
		})
	}
}
