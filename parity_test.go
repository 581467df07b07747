package ptc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools/demo"
)

// surfaceProbe walks everything a script can see — its tools (the proxy,
// every namespace, $search and $describe, what they answer), console,
// input, then globalThis: every object reachable from it through own
// properties (string and symbol keys), accessors and prototypes, with each
// property's attributes, type and, for functions, name, length and
// Function.prototype.toString — and returns one line per fact. Values that
// change from run to run (clocks, random numbers) are never read: only
// properties are.
const surfaceProbe = `
const lines = [];
const seen = new Map();
const keyName = (k) => typeof k === "symbol" ? "@@" + String(k.description) : String(k);
const fnInfo = (f) => { let s; try { s = Function.prototype.toString.call(f); } catch (e) { s = "toString throws " + e.name; } return s + "/" + f.length + "/" + String(f.name); };
function walk(v, path, depth) {
	if (v === null || (typeof v !== "object" && typeof v !== "function")) return;
	if (seen.has(v)) { lines.push(path + " = " + seen.get(v)); return; }
	seen.set(v, path);
	if (depth > 8) { lines.push(path + " (deeper)"); return; }
	const proto = Object.getPrototypeOf(v);
	const keys = Reflect.ownKeys(v).sort((a, b) => keyName(a) < keyName(b) ? -1 : keyName(a) > keyName(b) ? 1 : 0);
	for (const k of keys) {
		const d = Object.getOwnPropertyDescriptor(v, k);
		if (!d) continue;
		const p = path + "." + keyName(k);
		let line = p + " " + (d.writable ? "w" : "-") + (d.enumerable ? "e" : "-") + (d.configurable ? "c" : "-");
		if ("value" in d) {
			line += " " + typeof d.value;
			if (typeof d.value === "function") line += " " + fnInfo(d.value);
			else if (typeof d.value !== "object") line += " " + String(d.value);
			lines.push(line);
			walk(d.value, p, depth + 1);
		} else {
			line += " get:" + typeof d.get + " set:" + typeof d.set;
			lines.push(line);
			if (d.get) walk(d.get, p + "<get>", depth + 1);
			if (d.set) walk(d.set, p + "<set>", depth + 1);
		}
	}
	lines.push(path + " [[Prototype]] " + (proto === null ? "null" : (seen.get(proto) || "(new)")));
	if (proto !== null) walk(proto, path + ".[[Prototype]]", depth + 1);
}
lines.push("typeof tools " + typeof tools + ", keys " + Object.keys(tools).join(","));
lines.push("tools.$search " + typeof tools.$search + ", tools.$describe " + typeof tools.$describe);
lines.push("search " + JSON.stringify((await tools.$search("travel budget by level", 3)).map((h) => h.name)));
lines.push("describe " + JSON.stringify(await tools.$describe("get_budget_by_level")));
try { await tools.$describe("no_such_tool"); } catch (e) { lines.push("describe unknown " + JSON.stringify([e.name, e.code, e.tool, e.message])); }
try { await tools.nope({}); } catch (e) { lines.push("unknown tool " + JSON.stringify([e.name, e.code, e.tool])); }
lines.push("call " + JSON.stringify(await tools.get_budget_by_level({level: "senior"})));
lines.push("input " + JSON.stringify(input));
walk(tools, "tools", 0);
walk(console, "console", 0);
walk(globalThis, "globalThis", 0);
return lines.join("\n");
`

// TestParityEverySurface runs the surface probe in JavaScript and
// TypeScript, and a WebAssembly guest that reports its own surface, in
// every isolation of the Go API, and requires the same report: no
// capability a script can see depends on where it runs.
func TestParityEverySurface(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and builds a Go guest")
	}
	modes := []struct {
		name string
		opts []ptc.Option
	}{
		{"inprocess", nil},
		{"workers", []ptc.Option{ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 2})}},
	}
	probe := buildGuest(t, "probe")
	reqs := []struct {
		name string
		req  ptc.Request
	}{
		{"javascript", ptc.Request{Language: ptc.LanguageJavaScript, Source: surfaceProbe, Input: json.RawMessage(`{"n":[1,"two"]}`)}},
		{"typescript", ptc.Request{Language: ptc.LanguageTypeScript, Source: surfaceProbe, Input: json.RawMessage(`{"n":[1,"two"]}`)}},
		{"wasm", ptc.Request{Language: ptc.LanguageWASM, Module: probe, Input: json.RawMessage(`{"n":[1,"two"]}`)}},
	}
	reports := map[string][]string{}
	for _, m := range modes {
		r, err := ptc.NewRunner(append([]ptc.Option{ptc.WithTools(demo.Tools()...)}, m.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, rq := range reqs {
			req := rq.req
			req.Limits = ptc.Limits{MaxOutputBytes: 8 << 20}
			var logs []string
			req.OnLog = func(e ptc.LogEntry) { logs = append(logs, e.Level+" "+e.Message) }
			res, err := r.Execute(context.Background(), req)
			if err != nil {
				t.Fatalf("%s/%s: %v", m.name, rq.name, err)
			}
			if res.Error != nil {
				t.Fatalf("%s/%s: %v", m.name, rq.name, res.Error)
			}
			var report string
			if rq.name == "wasm" {
				report = string(res.Result)
			} else if err := json.Unmarshal(res.Result, &report); err != nil {
				t.Fatal(err)
			}
			var trace []string
			for _, c := range res.Trace {
				trace = append(trace, c.Tool+" "+c.ErrorCode)
			}
			reports[rq.name] = append(reports[rq.name], strings.Join([]string{report, strings.Join(logs, "\n"), strings.Join(trace, "\n")}, "\n--\n"))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, rq := range reqs {
		got := reports[rq.name]
		if len(got) != len(modes) {
			t.Fatalf("%s: %d reports", rq.name, len(got))
		}
		if rq.name != "wasm" {
			for _, want := range []string{"tools.$search function", "tools.$describe function", "globalThis.Array", "console.log"} {
				if !strings.Contains(got[0], want) {
					t.Errorf("%s: the report lacks %q: the probe is not walking what it should", rq.name, want)
				}
			}
		}
		for i := 1; i < len(modes); i++ {
			if got[i] != got[0] {
				t.Errorf("%s: %s sees another surface than %s:\n%s", rq.name, modes[i].name, modes[0].name, diffLines(got[0], got[i]))
			}
		}
		t.Logf("%s: %d lines of surface, the same in %d modes", rq.name, strings.Count(got[0], "\n")+1, len(modes))
	}
}

// diffLines lists the lines of a missing from b (-) and of b missing
// from a (+), at most 40.
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 40 {
		out = append(out[:40], "…")
	}
	return strings.Join(out, "\n")
}
