package adversarial

import (
	"fmt"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

func floodCases() []tcase {
	f := func(name, src string, w want, fast bool, opts ...opt) tcase {
		return tcase{name: name, family: famFlood, fast: fast, bound: 45 * time.Second,
			req: jsReq(src, append([]opt{timeout(30 * time.Second), memory(256 * MiB)}, opts...)...), want: w}
	}
	cs := []tcase{
		// Logs.
		{
			name: "log-empty-entries", family: famFlood, fast: true, bound: 45 * time.Second,
			req:          jsReq(`for (let i = 0; i < 2e6; i++) console.log(""); return 1`, timeout(30*time.Second), maxLogs(64*KiB)),
			want:         succeeds("1").and(logsBounded),
			serverGrowth: 128 * MiB,
		},
		{
			name: "log-empty-entries-until-timeout", family: famFlood, bound: 20 * time.Second,
			req:          jsReq(`for (;;) console.log("")`, timeout(3*time.Second), maxLogs(64*KiB)),
			want:         fails(Timeout, CPULimit).and(logsBounded),
			serverGrowth: 256 * MiB,
		},
		{
			// 2e6 empty entries from 2e4 concurrent async functions (2e5 of
			// them would need ~500 MiB of heap for the promises alone).
			name: "log-empty-entries-promise-all", family: famFlood, bound: 45 * time.Second,
			req:          jsReq(`await Promise.all(Array.from({length: 2e4}, async () => { for (let i = 0; i < 50; i++) { console.log(""); console.error("") } })); return 1`, timeout(30*time.Second), maxLogs(64*KiB)),
			want:         succeeds("1").and(logsBounded),
			serverGrowth: 128 * MiB,
		},
		{
			name: "log-no-arguments", family: famFlood, bound: 45 * time.Second,
			req:          jsReq(`for (let i = 0; i < 1e6; i++) console.log(); return 1`, timeout(30*time.Second), maxLogs(64*KiB)),
			want:         succeeds("1").and(logsBounded),
			serverGrowth: 128 * MiB,
		},
		f("log-huge-entry", `console.log("x".repeat(4 << 20)); return 1`, succeeds("1").and(logsBounded), false, maxLogs(64*KiB)),
		f("log-many-small", `for (let i = 0; i < 2e5; i++) console.log("entry " + i); return 1`, succeeds("1").and(logsBounded), true, maxLogs(64*KiB)),
		f("log-levels", `console.log("a"); console.info("b"); console.warn("c"); console.error("d"); console.debug("e"); return 1`,
			succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				var got []string
				for _, e := range r.GetLogs() {
					got = append(got, e.GetLevel()+":"+e.GetMessage())
				}
				if fmt.Sprint(got) != "[log:a info:b warn:c error:d debug:e]" {
					return fmt.Errorf("logs %v", got)
				}
				return nil
			}), false),
		f("log-hostile-tostring", `console.log({toString() { throw new Error("x") }}, new Proxy({}, {get() { throw new Error("trap") }, ownKeys() { throw new Error("trap") }})); return 1`,
			succeeds("1").or(ScriptError), false),
		f("log-cyclic-and-exotic", `const o = {}; o.o = o; console.log(o, Symbol("s"), 10n, undefined, null, () => 1, new Map([[1, 2]])); return 1`,
			succeeds("1").or(ScriptError), false),
		f("log-huge-object", `console.log(Array.from({length: 5e4}, (_, i) => ({i, s: "v" + i}))); return 1`, succeeds("1").or(ScriptError), false, maxLogs(64*KiB)),
		f("log-zero-cap", `for (let i = 0; i < 1000; i++) console.log("x"); return 1`, succeeds("1"), false, maxLogs(1)),
		// Output.
		f("output-over-default", `return "x".repeat(2 << 20)`, fails(OutputLimit).and(errorLimit(1<<20)), true),
		f("output-tiny-limit", `return "hello, world"`, fails(OutputLimit).and(errorLimit(10)), false, maxOutput(10)),
		f("output-utf8-bytes", `return "€".repeat(400000)`, fails(OutputLimit), false),
		f("output-many-keys", `const o = {}; for (let i = 0; i < 2e5; i++) o["k" + i] = i; return o`, fails(OutputLimit), false),
		f("output-at-limit", `return "x".repeat(98)`, succeeds(`"`+repeat("x", 98)+`"`), false, maxOutput(100)),
		f("output-huge-array-of-nulls", `return new Array(1e6).fill(null)`, fails(OutputLimit, MemoryLimit), false),
		// Tool calls.
		f("calls-awaited-over-limit", `for (;;) await tools.get_budget_by_level({level: "junior"});`,
			fails(ToolCallLimit).and(errorLimit(50)).and(toolCalls(51, 50, "tool_call_limit")), true, maxCalls(50)),
		f("calls-promise-all-over-limit", `await Promise.all(Array.from({length: 2000}, () => tools.get_budget_by_level({level: "senior"})))`,
			fails(ToolCallLimit).and(toolCallsEnded(2000, 100)), false, maxCalls(100)),
		f("calls-refusals-caught", `const r = await Promise.allSettled(Array.from({length: 500}, () => tools.get_budget_by_level({level: "senior"}))); return r.filter((x) => x.status === "fulfilled").length`,
			succeeds("100").and(toolCalls(500, 100, "tool_call_limit")), false, maxCalls(100)),
		f("calls-concurrent-many", `const r = await Promise.all(Array.from({length: 5000}, (_, i) => tools.get_budget_by_level({level: ["junior", "senior", "staff"][i % 3]}))); return r.length`,
			succeeds("5000"), false, maxCalls(10000), maxConcurrent(256)),
		f("calls-invalid-arguments-flood", `const r = await Promise.allSettled(Array.from({length: 3000}, () => tools.get_budget_by_level({level: "emperor"}))); return r.every((x) => x.status === "rejected" && x.reason.name === "ToolArgumentError")`,
			succeeds("true").and(toolCalls(3000, 0, "invalid_arguments")), false, maxCalls(5000)),
		f("calls-big-results", `let n = 0; for (let i = 0; i < 40; i++) n += (await tools.get_expenses({member_id: "eng-01", quarter: "Q3"})).length; return n > 0`,
			succeeds("true"), false),
		f("calls-and-logs-interleaved", `await Promise.all(Array.from({length: 2000}, async (_, i) => { console.log("before " + i); await tools.get_budget_by_level({level: "junior"}); console.log("after " + i) })); return 1`,
			succeeds("1"), false, maxCalls(5000), maxLogs(16*KiB)),
	}
	return cs
}

// repeat is strings.Repeat, for readability in tables.
func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for i := 0; i < n; i++ {
		out = append(out, s...)
	}
	return string(out)
}
