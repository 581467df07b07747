// Command ptc-peerbench runs ptc on the workloads of the shared sandbox
// comparison (new sandbox → run script → JSON result → sandbox disposed),
// and prints one JSON line in the comparison's format, so that ptc can be
// measured side by side with other sandboxes in the same run:
//
//	ptc-peerbench -mode trivial|chain|expense|alive|spin|spinAfterAwait|membomb [-n 50] [-warm 30] [-workers] [-wasm guest.wasm] [-python] [-gap 300ms] [-cpuprofile f] [-memprofile f]
//
// The workloads: `return {ok:1}`; 100 sequential awaited calls to an echo
// tool; 20 awaited calls returning 100 expense items each, summed in the
// script; and the limit probes (100 ms time limit, 64 MB memory limit).
// Tools resolve immediately, so the figures are sandbox and marshalling
// overhead, schema validation of the arguments included. With -wasm, the
// same workloads run as a Go WebAssembly guest (./guest, the comparison
// kit's Go guest on ptc's guest SDK), sent by hash after the first
// execution as a client that runs it again would. The timed modes report
// each execution's wall time (samples) and the sandbox's CPU time of it
// (cpu_samples, Result.Stats.CPUTime), so that what an execution waited
// can be told from what it computed.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

const limit = 11000

var cats = []string{"travel", "meals", "lodging", "software", "hardware", "training", "office", "other"}

type item struct {
	ID       string  `json:"id"`
	Date     string  `json:"date"`
	Category string  `json:"category"`
	Merchant string  `json:"merchant"`
	Amount   float64 `json:"amount"`
	Approved bool    `json:"approved"`
}

// workload holds the comparison's data and scripts, generated exactly as
// the other drivers generate them.
type workload struct {
	members  []string
	expenses map[string]json.RawMessage
	scripts  map[string]string
	// pyScripts are the workloads in Python.
	pyScripts map[string]string
	expected  map[string]string
}

func newWorkload() *workload {
	w := &workload{expenses: map[string]json.RawMessage{}, scripts: map[string]string{}, pyScripts: map[string]string{}, expected: map[string]string{}}
	type over struct {
		Member string  `json:"member"`
		Total  float64 `json:"total"`
	}
	res := []over{}
	for idx := 0; idx < 20; idx++ {
		m := fmt.Sprintf("member%02d", idx)
		w.members = append(w.members, m)
		s := uint32(idx + 1)
		r := func() uint32 { s = s*1664525 + 1013904223; return s }
		items := make([]item, 0, 100)
		total := 0.0
		for k := 0; k < 100; k++ {
			a, b, c := r(), r(), r()
			it := item{
				ID:       fmt.Sprintf("%s-%03d", m, k),
				Date:     fmt.Sprintf("2026-%02d-%02d", 1+a%12, 1+b%28),
				Category: cats[c%uint32(len(cats))],
				Merchant: fmt.Sprintf("Merchant %d", a%1000),
				Amount:   float64(b%20000)/100 + float64(idx),
				Approved: c&1 == 1,
			}
			total += it.Amount
			items = append(items, it)
		}
		w.expenses[m], _ = json.Marshal(items)
		if total > limit {
			res = append(res, over{m, math.Round(total*100) / 100})
		}
	}
	b, _ := json.Marshal(res)
	w.expected["expense"] = string(b)
	w.expected["trivial"] = `{"ok":1}`
	w.expected["chain"] = `{"sum":4950}`
	mb, _ := json.Marshal(w.members)
	w.scripts["trivial"] = `return {ok:1}`
	w.scripts["chain"] = "let s = 0;\nfor (let i = 0; i < 100; i++) { const r = await tools.echo({i}); s += r.i; }\nreturn {sum: s};"
	w.scripts["expense"] = `const members = ` + string(mb) + `;
const over = [];
for (const m of members) {
  const items = await tools.get_expenses({member: m});
  let t = 0;
  for (const it of items) t += it.amount;
  if (t > ` + strconv.Itoa(limit) + `) over.push({member: m, total: Math.round(t * 100) / 100});
}
return over;`
	w.scripts["spin"] = `while (true) {}`
	w.scripts["spinAfterAwait"] = `await tools.echo({i: 0}); while (true) {}`
	w.scripts["membomb"] = `const a = []; for (;;) { const b = []; for (let i = 0; i < 65536; i++) b.push(i); a.push(b); }`
	// The same workloads in Python (-python). The expense total is summed
	// item by item, as JavaScript sums it (Python's sum() compensates).
	w.pyScripts["trivial"] = `return {"ok": 1}`
	w.pyScripts["chain"] = "s = 0\nfor i in range(100):\n    r = await tools.echo(i=i)\n    s += r[\"i\"]\nreturn {\"sum\": s}"
	w.pyScripts["expense"] = `members = ` + string(mb) + `
over = []
for m in members:
    items = await tools.get_expenses(member=m)
    t = 0
    for it in items:
        t += it["amount"]
    if t > ` + strconv.Itoa(limit) + `:
        over.append({"member": m, "total": round(t * 100) / 100})
return over`
	w.pyScripts["spin"] = "while True:\n    pass"
	w.pyScripts["spinAfterAwait"] = "await tools.echo(i=0)\nwhile True:\n    pass"
	w.pyScripts["membomb"] = "a = []\nwhile True:\n    a.append(list(range(65536)))"
	return w
}

func (w *workload) tools() []tools.Tool {
	return []tools.Tool{
		{
			Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler:    func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil },
			Inline:     true,
		},
		{
			Definition: tools.Definition{Name: "get_expenses", InputSchema: json.RawMessage(
				`{"type":"object","properties":{"member":{"type":"string"}},"required":["member"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
				var in struct{ Member string }
				if err := json.Unmarshal(c.Arguments, &in); err != nil {
					return nil, err
				}
				if b, ok := w.expenses[in.Member]; ok {
					return b, nil
				}
				return json.RawMessage(`[]`), nil
			},
			TrustOutput: true,
			Inline:      true,
		},
	}
}

func procMem() (rss, pss int64) {
	b, _ := os.ReadFile("/proc/self/status")
	if m := regexp.MustCompile(`VmRSS:\s+(\d+)`).FindSubmatch(b); m != nil {
		rss, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	b, _ = os.ReadFile("/proc/self/smaps_rollup")
	if m := regexp.MustCompile(`Pss:\s+(\d+)`).FindSubmatch(b); m != nil {
		pss, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	return
}

func quantile(s []float64, q float64) float64 {
	pos := float64(len(s)-1) * q
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func r4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func emit(m map[string]any) {
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
}

// flags are the command line.
type flags struct {
	mode, name, guestPath string
	n, warm               int
	workers, python       bool
	// gap is an untimed pause before each execution: the latency of a
	// request the runner keeps up with (a Python interpreter started
	// ahead of it), not of executions back to back.
	gap time.Duration
}

// bench is one run: its flags, workload, runner and the JSON line it
// prints.
type bench struct {
	flags
	w    *workload
	r    *ptc.Runner
	base map[string]any
	// exec runs one execution of the mode's workload.
	exec func(src string, lim ptc.Limits) (*ptc.Result, error)
}

func main() {
	ptc.RunWorker()
	var f flags
	flag.StringVar(&f.mode, "mode", "trivial", "trivial|chain|expense|alive|spin|spinAfterAwait|membomb")
	flag.IntVar(&f.n, "n", 50, "measured executions (alive: executions parked at once)")
	flag.IntVar(&f.warm, "warm", 30, "warm-up executions")
	flag.StringVar(&f.name, "peer", "ptc (in-process)", "the name reported")
	flag.BoolVar(&f.workers, "workers", false, "run executions in isolated worker processes (as ptcd does)")
	flag.StringVar(&f.guestPath, "wasm", "", "run the workloads as this WebAssembly guest (built from ./guest)")
	flag.BoolVar(&f.python, "python", false, "run the workloads as Python scripts (CPython for WASI, found as ptc run finds it)")
	flag.DurationVar(&f.gap, "gap", 0, "an untimed pause before each execution (0: back to back)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured run to this file")
	memprofile := flag.String("memprofile", "", "write the allocations of the whole run to this file")
	flag.Parse()

	b := &bench{flags: f, w: newWorkload(), base: map[string]any{"peer": f.name, "mode": f.mode, "go": runtime.Version()}}
	t0 := time.Now()
	opts := []ptc.Option{ptc.WithTools(b.w.tools()...)}
	if f.workers {
		opts = append(opts, ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true}))
	}
	r, err := ptc.NewRunner(opts...)
	if err != nil {
		b.fail(err)
	}
	defer r.Close()
	b.r = r
	b.base["init_ms"] = r4(float64(time.Since(t0).Nanoseconds()) / 1e6)
	b.exec = func(src string, lim ptc.Limits) (*ptc.Result, error) {
		return r.Execute(context.Background(), ptc.Request{Source: src, Limits: lim})
	}
	if f.python {
		b.usePython()
	}
	if f.guestPath != "" {
		b.useGuest()
	}
	if *cpuprofile != "" {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			b.fail(err)
		}
		defer stop()
	}
	if *memprofile != "" {
		defer writeAllocs(b, *memprofile)
	}
	switch f.mode {
	case "trivial", "chain", "expense":
		b.timed()
	case "alive":
		b.alive()
	case "spin", "spinAfterAwait", "membomb":
		b.probe()
	default:
		b.fail(errors.New("unknown mode"))
	}
	emit(b.base)
}

// fail prints the line with the error and exits.
func (b *bench) fail(err error) {
	b.base["fatal"] = err.Error()
	emit(b.base)
	os.Exit(1)
}

// usePython runs the workloads as Python scripts. The interpreter is
// compiled (or loaded from its cache) by the first execution; the
// measurements are of executions, not of that.
func (b *bench) usePython() {
	for k, v := range b.w.pyScripts {
		b.w.scripts[k] = v
	}
	b.exec = func(src string, lim ptc.Limits) (*ptc.Result, error) {
		return b.r.Execute(context.Background(), ptc.Request{Language: ptc.LanguagePython, Source: src, Limits: lim})
	}
	if _, err := b.exec("return 1", ptc.Limits{Timeout: 10 * time.Minute}); err != nil {
		b.fail(err)
	}
}

// useGuest runs the workloads as the WebAssembly guest: the module is
// sent once, then by hash.
func (b *bench) useGuest() {
	mod, err := os.ReadFile(b.guestPath)
	if err != nil {
		b.fail(err)
	}
	sum := sha256.Sum256(mod)
	hash := hex.EncodeToString(sum[:])
	sent := false
	run := func(workload string, lim ptc.Limits) (*ptc.Result, error) {
		req := ptc.Request{Language: ptc.LanguageWASM, ModuleSHA256: hash, Input: json.RawMessage(`{"workload":"` + workload + `"}`), Limits: lim}
		if !sent {
			req.Module = mod
		}
		res, err := b.r.Execute(context.Background(), req)
		sent = sent || err == nil
		return res, err
	}
	b.exec = func(_ string, lim ptc.Limits) (*ptc.Result, error) { return run(b.mode, lim) }
	if b.mode == "spin" || b.mode == "spinAfterAwait" || b.mode == "membomb" {
		// The probes measure the limit, not the compilation: the module
		// is compiled first, as the other drivers do at start (in each
		// worker that may run it).
		for i := 0; i < b.warm; i++ {
			if _, err := run("trivial", ptc.Limits{Timeout: time.Minute}); err != nil {
				b.fail(err)
			}
		}
	}
}

// timed measures warm+n executions of the mode's script and reports the
// n after the warm-up.
func (b *bench) timed() {
	var samples, cpus []float64
	first := -1.0
	if b.gap > 0 {
		b.base["gap_ms"] = b.gap.Milliseconds()
	}
	for i := 0; i < b.warm+b.n; i++ {
		if b.gap > 0 {
			time.Sleep(b.gap)
		}
		t := time.Now()
		res, err := b.exec(b.w.scripts[b.mode], ptc.Limits{Timeout: 10 * time.Second})
		dt := float64(time.Since(t).Nanoseconds()) / 1e6
		if err != nil {
			b.fail(err)
		}
		if res.Error != nil {
			b.fail(res.Error)
		}
		if string(res.Result) != b.w.expected[b.mode] {
			b.fail(fmt.Errorf("wrong output: %.200s", res.Result))
		}
		if first < 0 {
			first = dt
		}
		if i >= b.warm {
			samples = append(samples, dt)
			cpus = append(cpus, r4(float64(res.Stats.CPUTime.Nanoseconds())/1e6))
		}
	}
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	sum := 0.0
	rs := make([]float64, len(samples))
	for i, s := range samples {
		sum += s
		rs[i] = r4(s)
	}
	b.base["first_exec_ms"] = r4(first)
	b.base["n"] = len(samples)
	b.base["median_ms"] = r4(quantile(sorted, 0.5))
	b.base["p99_ms"] = r4(quantile(sorted, 0.99))
	b.base["min_ms"] = r4(sorted[0])
	b.base["mean_ms"] = r4(sum / float64(len(samples)))
	b.base["samples"] = rs
	// The sandbox's CPU time of each execution (Result.Stats.CPUTime: in
	// a worker, its thread's CPU clock), beside its wall time: what of a
	// sample the execution computed, and what it waited.
	b.base["cpu_samples"] = cpus
	sortedCPU := append([]float64(nil), cpus...)
	sort.Float64s(sortedCPU)
	b.base["cpu_median_ms"] = r4(quantile(sortedCPU, 0.5))
}

// park starts k executions parked at once on a tool call that has not
// answered; release lets them finish and closes their runner.
func (b *bench) park(k int) (release func(), err error) {
	hold := make(chan struct{})
	started := make(chan struct{}, k)
	ropts := []ptc.Option{}
	if b.workers {
		ropts = append(ropts, ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Max: 2 * k, ExecutionsPerWorker: 1}))
	}
	rr, err := ptc.NewRunner(append(ropts, ptc.WithTools(tools.Tool{Definition: tools.Definition{Name: "hold"},
		Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			started <- struct{}{}
			select {
			case <-hold:
			case <-ctx.Done():
			}
			return json.RawMessage(`1`), nil
		}}))...)
	if err != nil {
		return nil, err
	}
	// Each execution's goroutine ends when release closes hold.
	done := make(chan error, k)
	for i := 0; i < k; i++ {
		go func() {
			_, err := rr.Execute(context.Background(), ptc.Request{Source: `await tools.hold(); return {ok:1}`})
			done <- err
		}()
	}
	for i := 0; i < k; i++ {
		<-started
	}
	return func() {
		close(hold)
		for i := 0; i < k; i++ {
			<-done
		}
		_ = rr.Close()
	}, nil
}

// alive measures the memory of n executions parked at once, against one.
func (b *bench) alive() {
	rel, err := b.park(1)
	if err != nil {
		b.fail(err)
	}
	runtime.GC()
	runtime.GC()
	rssB, pssB := procMem()
	var msB runtime.MemStats
	runtime.ReadMemStats(&msB)
	rel2, err := b.park(b.n)
	if err != nil {
		b.fail(err)
	}
	runtime.GC()
	runtime.GC()
	rssA, pssA := procMem()
	var msA runtime.MemStats
	runtime.ReadMemStats(&msA)
	n := int64(b.n)
	b.base["alive"] = b.n
	b.base["per_sandbox_rss_kb"] = (rssA - rssB) / n
	b.base["per_sandbox_pss_kb"] = (pssA - pssB) / n
	b.base["per_sandbox_go_heap_inuse_kb"] = int64(msA.HeapInuse-msB.HeapInuse) / 1024 / n
	b.base["host_rss_before_kb"] = rssB
	b.base["host_rss_after_kb"] = rssA
	rel2()
	rel()
}

// probe runs a limit probe (100 ms time limit, 64 MB memory limit) and
// reports whether and when the limit stopped it.
func (b *bench) probe() {
	lim := ptc.Limits{Timeout: 100 * time.Millisecond}
	b.base["limit"] = "100 ms"
	if b.mode == "membomb" {
		lim = ptc.Limits{Timeout: 10 * time.Second, CPUTime: 10 * time.Second, MemoryBytes: 64 << 20}
		b.base["limit"] = "64 MB"
	}
	rssB, _ := procMem()
	t := time.Now()
	// The goroutine ends with the execution; the watchdog below does not
	// wait for it.
	done := make(chan *ptc.Result, 1)
	go func() {
		res, err := b.exec(b.w.scripts[b.mode], lim)
		if err != nil {
			res = &ptc.Result{Error: &ptc.ExecutionError{Kind: ptc.KindInternal, Message: err.Error()}}
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res.Error != nil {
			b.base["outcome"] = "stopped"
			b.base["error"] = res.Error.Kind.String() + ": " + strings.SplitN(res.Error.Message, "\n", 2)[0]
		} else {
			b.base["outcome"] = "completed?!"
		}
	case <-time.After(20 * time.Second):
		b.base["outcome"] = "NOT enforced (still running at watchdog)"
	}
	b.base["elapsed_ms"] = math.Round(float64(time.Since(t).Nanoseconds())/1e5) / 10
	rssA, _ := procMem()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.base["host_rss_before_kb"] = rssB
	b.base["host_rss_after_kb"] = rssA
	b.base["go_heap_sys_mb"] = ms.HeapSys >> 20
}

// writeAllocs writes the allocation profile (pprof's "allocs") to path.
func writeAllocs(b *bench, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.fail(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.fail(err)
	}
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
