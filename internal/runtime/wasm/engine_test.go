package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("result is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("expected value is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("result = %s, want %s", got, want)
	}
}

func TestExpensesGuest(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "expenses.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []*tools.Compiled
	for _, tool := range demo.Tools() {
		c, err := tools.Compile(tool)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, c)
	}
	e := newEngine(t)
	j, d := job(guest(t, "expenses"), "", limits.Limits{}, ts)
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatalf("expenses guest failed: %v", out.Err)
	}
	jsonEqual(t, out.Result, want)
	if d.Calls() < 3 {
		t.Errorf("tool calls = %d, want the team, expenses and budget calls", d.Calls())
	}
	entries, _ := j.Logs.Entries()
	if len(entries) != 1 || !strings.Contains(entries[0].Message, "members over their travel budget") {
		t.Errorf("logs = %+v, want the summary line", entries)
	}
}

func TestRunResults(t *testing.T) {
	e := newEngine(t)
	cases := []struct {
		name   string
		module func(testing.TB) []byte
		input  string
		want   string
	}{
		{"minimal echoes its input", func(tb testing.TB) []byte { return guest(tb, "minimal") }, `{"x": [1, 2]}`, `{"echo":{"x":[1,2]}}`},
		{"empty input is null", func(tb testing.TB) []byte { return guest(tb, "minimal") }, ``, `{"echo":null}`},
		{"tiny module result is compacted", func(testing.TB) []byte { return writeModule(" {\"a\" : 1}\n") }, ``, `{"a":1}`},
		{"empty stdout is null", func(testing.TB) []byte { return writeModule("") }, ``, `null`},
		{"exit code zero is success", func(testing.TB) []byte { return exitModule("7", 0) }, ``, `7`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := job(tc.module(t), tc.input, limits.Limits{}, testTools(t))
			out := e.Run(context.Background(), j)
			if out.Err != nil {
				t.Fatalf("run failed: %v", out.Err)
			}
			if string(out.Result) != tc.want {
				t.Fatalf("result = %s, want %s", out.Result, tc.want)
			}
			if out.PeakMemoryBytes <= 0 {
				t.Errorf("peak memory = %d, want > 0", out.PeakMemoryBytes)
			}
		})
	}
}

// exitModule writes out and exits with code.
func exitModule(out string, code int32) []byte {
	var b modBuilder
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	exit := b.importFunc("wasi_snapshot_preview1", "proc_exit", []byte{i32}, nil)
	b.mem(1)
	b.dataAt(0, []byte{64, 0, 0, 0, byte(len(out)), 0, 0, 0})
	b.dataAt(64, []byte(out))
	// stderr gets the same text, so failures can quote it.
	start := b.function(nil, nil,
		i32c(1), i32c(0), i32c(1), i32c(8), call(fdWrite), opDrop,
		i32c(2), i32c(0), i32c(1), i32c(8), call(fdWrite), opDrop,
		i32c(code), call(exit))
	b.export("_start", 0x00, start)
	return b.bytes()
}

func TestToolCalls(t *testing.T) {
	e := newEngine(t)
	cases := []struct {
		name  string
		input string
		lim   limits.Limits
		want  string
	}{
		{"results in order", `{"tool":"echo","n":3,"args":{"v":1}}`, limits.Limits{},
			`{"results":[{"v":1},{"v":1},{"v":1}],"errors":[]}`},
		{"tool errors carry code and message", `{"tool":"fail","n":2}`, limits.Limits{},
			`{"results":[],"errors":[{"index":0,"code":"not_found","message":"no such record"},{"index":1,"code":"not_found","message":"no such record"}]}`},
		{"schema violations are argument errors", `{"tool":"typed","n":1,"args":{"n":"x"}}`, limits.Limits{}, ""},
		{"unknown tool", `{"tool":"nope","n":1}`, limits.Limits{}, ""},
		{"budget refuses the calls over it", `{"tool":"echo","n":3}`, limits.Limits{MaxToolCalls: 2}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := job(guest(t, "batch"), tc.input, tc.lim, testTools(t))
			out := e.Run(context.Background(), j)
			if out.Err != nil {
				t.Fatalf("run failed: %v", out.Err)
			}
			if tc.want != "" {
				jsonEqual(t, out.Result, []byte(tc.want))
				return
			}
			var res struct {
				Errors []struct{ Code, Message string }
			}
			if err := json.Unmarshal(out.Result, &res); err != nil || len(res.Errors) == 0 {
				t.Fatalf("result = %s, want errors", out.Result)
			}
			wantCode := map[string]string{
				"schema violations are argument errors": "invalid_arguments",
				"unknown tool":                          "unknown_tool",
				"budget refuses the calls over it":      "tool_call_limit",
			}[tc.name]
			if res.Errors[0].Code != wantCode {
				t.Fatalf("error code = %q, want %q (%s)", res.Errors[0].Code, wantCode, out.Result)
			}
		})
	}
}

func TestBatchRunsConcurrently(t *testing.T) {
	const n = 4
	e := newEngine(t)
	// Every call blocks until all n are in flight: the batch can only
	// finish if the host runs them together.
	j, d := job(guest(t, "batch"), `{"tool":"barrier","n":4}`,
		limits.Limits{MaxConcurrentToolCalls: n, Timeout: time.Minute}, testTools(t, barrierTool(n)))
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatalf("run failed: %v", out.Err)
	}
	var res struct {
		Results []json.RawMessage
		Errors  []json.RawMessage
	}
	if err := json.Unmarshal(out.Result, &res); err != nil || len(res.Results) != n || len(res.Errors) != 0 {
		t.Fatalf("result = %s, want %d results", out.Result, n)
	}
	if d.Calls() != n {
		t.Errorf("calls = %d, want %d", d.Calls(), n)
	}
	if out.CPUTime <= 0 {
		t.Errorf("cpu time = %v, want > 0", out.CPUTime)
	}
}

func TestLimits(t *testing.T) {
	e := newEngine(t)
	cases := []struct {
		name    string
		guest   string
		module  []byte
		input   string
		lim     limits.Limits
		kind    fault.Kind
		message string
	}{
		{name: "infinite loop hits the wall timeout", guest: "spinner",
			lim: limits.Limits{Timeout: 300 * time.Millisecond, CPUTime: time.Minute}, kind: fault.KindTimeout, message: "did not finish within 300ms"},
		{name: "tiny infinite loop hits the wall timeout", module: writeModule("", opLoopForever),
			lim: limits.Limits{Timeout: 300 * time.Millisecond, CPUTime: time.Minute}, kind: fault.KindTimeout},
		{name: "infinite loop hits the cpu limit", guest: "spinner",
			lim: limits.Limits{Timeout: time.Minute, CPUTime: 300 * time.Millisecond}, kind: fault.KindCPULimit, message: "CPU time"},
		{name: "memory growth past the limit", guest: "memgrow",
			lim: limits.Limits{MemoryBytes: 64 << 20}, kind: fault.KindMemoryLimit, message: "67108864 bytes"},
		{name: "initial memory over the limit", module: bigMemoryModule(100),
			lim: limits.Limits{MemoryBytes: 4 << 20}, kind: fault.KindMemoryLimit, message: "at start"},
		{name: "output flood", guest: "outflood",
			lim: limits.Limits{MaxOutputBytes: 4096}, kind: fault.KindOutputLimit, message: "4096 bytes"},
		{name: "result one byte over the output limit", module: writeModule(`"0123456789"`),
			lim: limits.Limits{MaxOutputBytes: 11}, kind: fault.KindOutputLimit},
		{name: "tool call flood", guest: "callflood", input: `{"tool":"echo"}`,
			lim: limits.Limits{MaxToolCalls: 5}, kind: fault.KindToolCallLimit, message: "tool call limit"},
		{name: "non-zero exit quotes stderr", module: exitModule("boom", 3),
			kind: fault.KindScript, message: "exited with code 3; stderr ends with: boom"},
		{name: "uncaught tool error", guest: "callflood", input: `{"tool":"fail"}`,
			kind: fault.KindScript, message: "no such record"},
		{name: "trap", module: writeModule("", opUnreachable),
			kind: fault.KindScript, message: "unreachable"},
		{name: "invalid JSON result", module: writeModule(`{"a":`),
			kind: fault.KindScript, message: "invalid JSON"},
		{name: "two JSON values", module: writeModule(`1 2`),
			kind: fault.KindScript, message: "exactly one JSON value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mod := tc.module
			if tc.guest != "" {
				mod = guest(t, tc.guest)
				// Compile first so that a cold compilation does not eat
				// into a short timeout.
				if _, err := e.Compile(context.Background(), mod); err != nil {
					t.Fatal(err)
				}
			}
			j, _ := job(mod, tc.input, tc.lim, testTools(t))
			out := e.Run(context.Background(), j)
			if out.Err == nil {
				t.Fatalf("run succeeded with %s, want %s", out.Result, tc.kind)
			}
			if out.Err.Kind != tc.kind {
				t.Fatalf("kind = %s (%v), want %s", out.Err.Kind, out.Err, tc.kind)
			}
			t.Logf("%s: %s", out.Err.Kind, out.Err.Message)
			if !strings.Contains(out.Err.Message, tc.message) {
				t.Fatalf("message = %q, want it to contain %q", out.Err.Message, tc.message)
			}
			if out.Result != nil {
				t.Errorf("result = %s, want none", out.Result)
			}
			// Every breach says which limit and what was observed, in the
			// limit's unit (a MEMORY_LIMIT or CPU_LIMIT once said 0).
			if tc.kind.IsBreach() && (out.Err.Limit <= 0 || out.Err.Observed < out.Err.Limit) {
				t.Errorf("breach limit %d observed %d", out.Err.Limit, out.Err.Observed)
			}
			want := map[fault.Kind]int64{fault.KindTimeout: int64(tc.lim.Timeout), fault.KindCPULimit: int64(tc.lim.CPUTime),
				fault.KindMemoryLimit: tc.lim.MemoryBytes, fault.KindOutputLimit: tc.lim.MaxOutputBytes, fault.KindToolCallLimit: int64(tc.lim.MaxToolCalls)}
			if w, ok := want[tc.kind]; ok && out.Err.Limit != w {
				t.Errorf("breach limit %d, want %d", out.Err.Limit, w)
			}
		})
	}
}

// bigMemoryModule has a memory of minPages pages and does nothing.
func bigMemoryModule(minPages uint32) []byte {
	var b modBuilder
	b.mem(minPages)
	b.export("_start", 0x00, b.function(nil, nil))
	return b.bytes()
}

func TestLogsAreCapped(t *testing.T) {
	e := newEngine(t)
	j, _ := job(exitModule("123456789", 0), "", limits.Limits{MaxLogBytes: 4 + limits.LogEntryOverhead}, testTools(t))
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, truncated := j.Logs.Entries()
	if !truncated || len(entries) != 1 || entries[0].Message != "1234" {
		t.Fatalf("logs = %+v truncated=%v, want one 4-byte entry, truncated", entries, truncated)
	}
}

// stderrModule writes data to stderr count times in one fd_write (the same
// iovec repeated), then returns.
func stderrModule(data string, count int) []byte {
	var b modBuilder
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	b.mem(1)
	const dataAt = 4096
	var iovs []byte
	for i := 0; i < count; i++ {
		iovs = append(iovs, dataAt&0xff, dataAt>>8, 0, 0, byte(len(data)), byte(len(data)>>8), 0, 0)
	}
	b.dataAt(0, iovs)
	b.dataAt(dataAt, []byte(data))
	start := b.function(nil, nil, i32c(2), i32c(0), i32c(int32(count)), i32c(8000), call(fdWrite), opDrop)
	b.export("_start", 0x00, start)
	return b.bytes()
}

// TestStderrNewlineFlood: a guest that writes nothing but newlines to
// stderr fills the logs like any other output — every line is an entry
// that costs its overhead — and the logs end truncated at the cap.
func TestStderrNewlineFlood(t *testing.T) {
	e := newEngine(t)
	lim := limits.Limits{MaxLogBytes: 4 << 10}
	// 400 writes of 10,000 newlines: 4,000,000 empty lines.
	j, _ := job(stderrModule(strings.Repeat("\n", 10000), 400), "", lim, testTools(t))
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, truncated := j.Logs.Entries()
	if max := int(lim.MaxLogBytes / limits.LogEntryOverhead); len(entries) == 0 || len(entries) > max || !truncated {
		t.Fatalf("%d entries (at most %d), truncated %v", len(entries), max, truncated)
	}
}

func TestCancel(t *testing.T) {
	e := newEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The tool cancels the execution's context: the guest is blocked in
	// the call, so the cancellation lands while it runs.
	cancelling := tools.Tool{Definition: tools.Definition{Name: "cancel"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
		cancel()
		return json.RawMessage(`{}`), nil
	}}
	mod := guest(t, "callflood")
	j, _ := job(mod, `{"tool":"cancel"}`, limits.Limits{}, testTools(t, cancelling))
	out := e.Run(ctx, j)
	// The words of every engine for the same end.
	if out.Err == nil || out.Err.Kind != fault.KindCancelled || out.Err.Message != "the execution was cancelled by the caller" {
		t.Fatalf("outcome = %+v, want CANCELLED", out.Err)
	}

	// A context that is already over ends the run before it starts.
	done, stop := context.WithTimeout(context.Background(), 0)
	defer stop()
	j, _ = job(writeModule("1"), "", limits.Limits{}, testTools(t))
	if out := e.Run(done, j); out.Err == nil || out.Err.Kind != fault.KindTimeout {
		t.Fatalf("outcome = %+v, want TIMEOUT for an expired context", out.Err)
	}
}

func TestInvalidModules(t *testing.T) {
	e := newEngine(t)
	var noStart modBuilder
	noStart.mem(1)
	noStart.export("run", 0x00, noStart.function(nil, nil))

	var unknownImport modBuilder
	unknownImport.importFunc("env", "now", nil, []byte{i64})
	unknownImport.export("_start", 0x00, unknownImport.function(nil, nil))

	var unknownHostFunc modBuilder
	unknownHostFunc.importFunc("ptc_v1", "exec", nil, nil)
	unknownHostFunc.export("_start", 0x00, unknownHostFunc.function(nil, nil))

	var badSignature modBuilder
	badSignature.importFunc("ptc_v1", "call", []byte{i32}, []byte{i32})
	badSignature.export("_start", 0x00, badSignature.function(nil, nil))

	var memImport modBuilder
	memImport.importRaw("wasi_snapshot_preview1", "memory", []byte{0x02, 0x00, 0x01})
	memImport.export("_start", 0x00, memImport.function(nil, nil))

	var startWithParams modBuilder
	startWithParams.export("_start", 0x00, startWithParams.function([]byte{i32}, nil))

	cases := []struct {
		name    string
		module  []byte
		message string
	}{
		{"empty", nil, "magic"},
		{"not wasm", []byte("print('hi')"), "magic"},
		{"truncated", writeModule("1")[:30], "invalid WebAssembly module"},
		{"missing _start", noStart.bytes(), "no _start"},
		{"unknown import module", unknownImport.bytes(), `from module "env"`},
		{"unknown host function", unknownHostFunc.bytes(), `no such function`},
		{"wrong host signature", badSignature.bytes(), "signature"},
		{"imported memory", memImport.bytes(), "provides only functions"},
		{"_start with parameters", startWithParams.bytes(), "take and return nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Compile(context.Background(), tc.module)
			if !errors.Is(err, ErrInvalidModule) {
				t.Fatalf("Compile error = %v, want ErrInvalidModule", err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error = %q, want it to contain %q", err, tc.message)
			}
			j, _ := job(tc.module, "", limits.Limits{}, testTools(t))
			out := e.Run(context.Background(), j)
			if out.Err == nil || out.Err.Kind != fault.KindSyntax || !errors.Is(out.Err, ErrInvalidModule) {
				t.Fatalf("Run outcome = %+v, want SYNTAX_ERROR wrapping ErrInvalidModule", out.Err)
			}
		})
	}

	small := newEngine(t, Config{MaxModuleBytes: 16})
	if _, err := small.Compile(context.Background(), writeModule("1")); !errors.Is(err, ErrInvalidModule) || !strings.Contains(err.Error(), "more than the 16 allowed") {
		t.Fatalf("oversized module error = %v", err)
	}
}

func TestCache(t *testing.T) {
	t.Run("second run does not recompile", func(t *testing.T) {
		e := newEngine(t)
		mod := writeModule("1")
		for i := 0; i < 3; i++ {
			j, _ := job(mod, "", limits.Limits{}, testTools(t))
			if out := e.Run(context.Background(), j); out.Err != nil {
				t.Fatal(out.Err)
			}
		}
		if s := e.stats(); s.Compiles != 1 || s.Hits != 2 || s.Cached != 1 {
			t.Fatalf("stats = %+v, want 1 compile, 2 hits, 1 cached", s)
		}
	})
	t.Run("run by hash", func(t *testing.T) {
		e := newEngine(t)
		mod := writeModule(`"by hash"`)
		j, _ := job(nil, "", limits.Limits{}, testTools(t))
		if _, err := e.RunHash(context.Background(), hashOf(mod), j); !errors.Is(err, ErrUnknownModule) {
			t.Fatalf("RunHash before compile: err = %v, want ErrUnknownModule", err)
		}
		hash, err := e.Compile(context.Background(), mod)
		if err != nil || hash != hashOf(mod) || !e.Has(hash) || !e.Has(strings.ToUpper(hash)) {
			t.Fatalf("Compile = %q, %v; Has = %v", hash, err, e.Has(hash))
		}
		out, err := e.RunHash(context.Background(), hash, j)
		if err != nil || out.Err != nil || string(out.Result) != `"by hash"` {
			t.Fatalf("RunHash = %+v, %v", out, err)
		}
	})
	t.Run("least recently used module is evicted", func(t *testing.T) {
		e := newEngine(t, Config{MaxModules: 2})
		a, b, c := writeModule("1"), writeModule("2"), writeModule("3")
		for _, m := range [][]byte{a, b, a, c} { // a used after b, so b goes
			if _, err := e.Compile(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		if !e.Has(hashOf(a)) || e.Has(hashOf(b)) || !e.Has(hashOf(c)) {
			t.Fatalf("has a=%v b=%v c=%v, want b evicted", e.Has(hashOf(a)), e.Has(hashOf(b)), e.Has(hashOf(c)))
		}
		if s := e.stats(); s.Evictions != 1 || s.Cached != 2 || s.Compiles != 3 {
			t.Fatalf("stats = %+v", s)
		}
		j, _ := job(nil, "", limits.Limits{}, testTools(t))
		if _, err := e.RunHash(context.Background(), hashOf(b), j); !errors.Is(err, ErrUnknownModule) {
			t.Fatalf("evicted module: err = %v, want ErrUnknownModule", err)
		}
	})
	t.Run("evicted module in use keeps running", func(t *testing.T) {
		e := newEngine(t, Config{MaxModules: 1})
		ctx := context.Background()
		started := make(chan struct{})
		proceed := make(chan struct{})
		gate := tools.Tool{Definition: tools.Definition{Name: "gate"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			close(started)
			select {
			case <-proceed:
			case <-ctx.Done():
			}
			return json.RawMessage(`{}`), nil
		}}
		batch := guest(t, "batch")
		j, _ := job(batch, `{"tool":"gate","n":1}`, limits.Limits{}, testTools(t, gate))
		done := make(chan *runtime.Outcome)
		// The goroutine ends when Run returns; the test waits for it.
		go func() { done <- e.Run(ctx, j) }()
		<-started
		if _, err := e.Compile(ctx, writeModule("1")); err != nil { // evicts batch
			t.Fatal(err)
		}
		if e.Has(hashOf(batch)) {
			t.Fatal("batch guest still cached")
		}
		close(proceed)
		if out := <-done; out.Err != nil {
			t.Fatalf("evicted module's run failed: %v", out.Err)
		}
	})
	t.Run("concurrent first runs compile once", func(t *testing.T) {
		e := newEngine(t)
		mod := guest(t, "minimal")
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, _ := job(mod, `1`, limits.Limits{}, testTools(t))
				if out := e.Run(context.Background(), j); out.Err != nil {
					errs <- out.Err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if s := e.stats(); s.Compiles != 1 || s.Hits != n-1 {
			t.Fatalf("stats = %+v, want 1 compile and %d hits", s, n-1)
		}
	})
	t.Run("close during a run", func(t *testing.T) {
		e := newEngine(t)
		ctx := context.Background()
		started := make(chan struct{})
		proceed := make(chan struct{})
		gate := tools.Tool{Definition: tools.Definition{Name: "gate"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			close(started)
			<-proceed
			return json.RawMessage(`{}`), nil
		}}
		mod := abiModule(true, map[int32]string{100: "gate"}, func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(0), i32c(0), i32c(0), call(f.call), opDrop, opLoopForever}
		})
		j, _ := job(mod, "", limits.Limits{}, testTools(t, gate))
		done := make(chan *runtime.Outcome)
		// The goroutine ends when Run returns; the test waits for it.
		go func() { done <- e.Run(ctx, j) }()
		<-started
		if err := e.Close(ctx); err != nil {
			t.Fatal(err)
		}
		close(proceed)
		if out := <-done; out.Err == nil || out.Err.Kind != fault.KindCancelled {
			t.Fatalf("outcome = %v, want CANCELLED", out.Err)
		}
	})
	t.Run("closed engine", func(t *testing.T) {
		e := newEngine(t)
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compile(context.Background(), writeModule("1")); !errors.Is(err, ErrClosed) {
			t.Fatalf("err = %v, want ErrClosed", err)
		}
		j, _ := job(writeModule("1"), "", limits.Limits{}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err == nil || out.Err.Kind != fault.KindInternal {
			t.Fatalf("outcome = %+v, want INTERNAL", out.Err)
		}
	})
}

// TestCloseDuringCompile: closing the engine while a module compiles must
// neither panic (wazero cannot compile on a closed runtime) nor hang: Close
// waits for the compilation, which then fails with ErrClosed or lands.
func TestCloseDuringCompile(t *testing.T) {
	mod := guest(t, "minimal")
	for i := 0; i < 1; i++ {
		e, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := e.Compile(context.Background(), mod)
			done <- err
		}()
		// Close once the compilation is registered (so it is in flight).
		for {
			e.mu.Lock()
			n := len(e.entries)
			e.mu.Unlock()
			if n > 0 {
				break
			}
			goruntime.Gosched()
		}
		if err := e.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("compile after close: %v", err)
		}
	}
}

// TestWithoutLoopChecksOutputFlood: a guest that writes to stdout forever
// and ignores the failed writes is stopped at the output limit without
// loop checks too (the write past the limit traps), not at its deadline.
func TestWithoutLoopChecksOutputFlood(t *testing.T) {
	// loop { fd_write(1, iov 0, 1, nwritten 8); drop; br 0 } (fd_write is
	// the module's only import, function 0).
	flood := bytes.Join([][]byte{{0x03, 0x40}, i32c(1), i32c(0), i32c(1), i32c(8), call(0), opDrop, {0x0c, 0x00, 0x0b}}, nil)
	mod := writeModule(`"0123456789"`, flood)
	for _, cfg := range []Config{{}, {NoLoopChecks: true}} {
		e := newEngine(t, cfg)
		j, _ := job(mod, ``, limits.Limits{MaxOutputBytes: 4096, Timeout: time.Minute}, testTools(t))
		out := e.Run(context.Background(), j)
		if out.Err == nil || out.Err.Kind != fault.KindOutputLimit {
			t.Fatalf("NoLoopChecks %v: %s %v, want OUTPUT_LIMIT", cfg.NoLoopChecks, out.Result, out.Err)
		}
	}
}
