package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// hardeningProbe is a hostile script and its expected outcome: a result,
// or an error of a kind whose message contains msg.
type hardeningProbe struct {
	name, src, want string
	kind            fault.Kind
	msg             string
}

// hardeningProbes are the engine's hardening cases (deep nesting on every
// path, recursion through built-ins, regular expression timeouts, size
// guards, hostile values, source maps, native-looking functions), which
// must give the same outcome in a worker and in-process.
var hardeningProbes = []hardeningProbe{
	{name: "deep program", src: "return " + strings.Repeat("[", 1e6) + strings.Repeat("]", 1e6), kind: fault.KindSyntax, msg: "nests more than"},
	{name: "deep eval", src: `try { eval("[".repeat(1e6) + "]".repeat(1e6)) } catch (e) { return e.name }`, want: `"SyntaxError"`},
	{name: "deep Function", src: `try { Function("return " + "(".repeat(1e6) + ")".repeat(1e6)) } catch (e) { return e.name }`, want: `"SyntaxError"`},
	{name: "JSON.parse", src: `try { JSON.parse("[".repeat(5e6) + "]".repeat(5e6)) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "JSON.stringify", src: `let o = {}; for (let i = 0; i < 2e4; i++) o = {a: o}; try { JSON.stringify(o) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "returned nested value", src: `let o = {}; for (let i = 0; i < 2e4; i++) o = {a: o}; return o`, kind: fault.KindScript, msg: "nests more than"},
	{name: "tool argument nested", src: `let o = {}; for (let i = 0; i < 2e4; i++) o = {a: o}; try { await tools.echo(o) } catch (e) { return e.code }`, want: `"invalid_arguments"`},
	{name: "String of a nested array", src: `let a = []; for (let i = 0; i < 2e4; i++) a = [a]; try { String(a) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "bound String chain", src: `let o = {}; for (let i = 0; i < 2e4; i++) { const p = o; o = {}; o.toString = String.bind(null, p) } try { String(o) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "proxy chain", src: `let p = {}; try { for (let i = 0; i < 2e4; i++) p = new Proxy(p, {}) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "regexp timeout", src: `try { /^(a+)+\1$/.test("a".repeat(40) + "b") } catch (e) { return e.name }`, want: `"RegExpTimeoutError"`},
	{name: "ArrayBuffer", src: `try { new ArrayBuffer(2 ** 31) } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "join of a sparse array", src: `try { new Array(2 ** 32 - 1).join("x") } catch (e) { return e.name }`, want: `"RangeError"`},
	{name: "sort comparator", src: `const a = Array.from({length: 100}, (_, i) => i); try { a.sort(() => { a.length = 0; return 1 }) } catch (e) { return e.name }`, want: `"TypeError"`},
	{name: "hostile stack getter", src: `const e = new Error("x"); Object.defineProperty(e, "stack", {get() { throw 1 }}); throw e`, kind: fault.KindScript, msg: "uncaught"},
	{name: "source map /dev/zero", src: `return eval("'ok'\n//# sourceMappingURL=/dev/zero")`, want: `"ok"`},
	{name: "native-looking tools", src: `return [String(tools.echo), String(console.log)]`, want: `["function echo() { [native code] }","function log() { [native code] }"]`},
}

// checkProbe compares an outcome with a probe's expectation.
func checkProbe(p hardeningProbe, result string, kind fault.Kind, msg string) error {
	if p.want != "" {
		if kind != fault.KindUnspecified || result != p.want {
			return fmt.Errorf("%s: result %s, error %v %q; want %s", p.name, result, kind, msg, p.want)
		}
		return nil
	}
	if kind != p.kind || !strings.Contains(msg, p.msg) {
		return fmt.Errorf("%s: %v %q (result %s); want %v containing %q", p.name, kind, msg, result, p.kind, p.msg)
	}
	return nil
}

// TestHardeningWorkerMode runs the probes in worker processes; after each,
// the pool still serves.
func TestHardeningWorkerMode(t *testing.T) {
	p := newPool(t, Config{Workers: 1})
	for _, probe := range hardeningProbes {
		t.Run(probe.name, func(t *testing.T) {
			job, _ := newJob(t, probe.src, testLimits())
			out := p.Run(context.Background(), job)
			var kind fault.Kind
			var msg string
			if out.Err != nil {
				kind, msg = out.Err.Kind, out.Err.Message
			}
			if err := checkProbe(probe, string(out.Result), kind, msg); err != nil {
				t.Error(err)
			}
			next, _ := newJob(t, `return 1 + 1`, testLimits())
			if out := p.Run(context.Background(), next); out.Err != nil || string(out.Result) != "2" {
				t.Fatalf("the pool does not serve after the probe: %s %v", out.Result, out.Err)
			}
		})
	}
}

// probeReport is one probe's outcome as the in-process child reports it.
type probeReport struct {
	Name, Result, Msg string
	Kind              fault.Kind
}

// TestHardeningInProcessChild runs the probes in-process and prints one
// JSON report per probe; it runs only as the child of
// TestHardeningInProcess (a regression could crash the process).
func TestHardeningInProcessChild(t *testing.T) {
	if os.Getenv("PTC_HARDENING_CHILD") == "" {
		t.Skip("runs as the child process of TestHardeningInProcess")
	}
	p := newPool(t, Config{Mode: ModeInProcess})
	for _, probe := range hardeningProbes {
		job, _ := newJob(t, probe.src, testLimits())
		out := p.Run(context.Background(), job)
		r := probeReport{Name: probe.name, Result: string(out.Result)}
		if out.Err != nil {
			r.Kind, r.Msg = out.Err.Kind, out.Err.Message
		}
		b, _ := json.Marshal(r)
		fmt.Printf("REPORT %s\n", b)
	}
	// Exit here: the leak check of TestMain would count regexp2's shared
	// clock goroutine, which the regular expression probe starts.
	_ = p.Close()
	os.Exit(0)
}

// TestHardeningInProcess runs the probes in-process, in a child process of
// the test binary that must survive them all.
func TestHardeningInProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardeningInProcessChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PTC_HARDENING_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s := string(out)
		if len(s) > 2000 {
			s = s[:2000]
		}
		t.Fatalf("the in-process probes crashed the process (%v):\n%s", err, s)
	}
	reports := map[string]probeReport{}
	for _, line := range strings.Split(string(out), "\n") {
		if b, ok := strings.CutPrefix(line, "REPORT "); ok {
			var r probeReport
			if err := json.Unmarshal([]byte(b), &r); err != nil {
				t.Fatal(err)
			}
			reports[r.Name] = r
		}
	}
	for _, probe := range hardeningProbes {
		r, ok := reports[probe.name]
		if !ok {
			t.Errorf("%s: no report", probe.name)
			continue
		}
		if err := checkProbe(probe, r.Result, r.Kind, r.Msg); err != nil {
			t.Error(err)
		}
	}
}
