package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
)

// Modules for the compile tests, assembled by hand.

// leb is the unsigned LEB128 encoding of v.
func leb(v uint64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

// sectionOf is a section with its id and size.
func sectionOf(id byte, content []byte) []byte {
	return append(append([]byte{id}, leb(uint64(len(content)))...), content...)
}

// moduleOf assembles a module: one type () -> (), n functions of it
// with the given bodies (locals and instructions), function 0 exported
// as _start.
func moduleOf(bodies ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, sectionOf(1, []byte{1, 0x60, 0, 0})...)
	funcs := leb(uint64(len(bodies)))
	for range bodies {
		funcs = append(funcs, 0)
	}
	out = append(out, sectionOf(3, funcs)...)
	out = append(out, sectionOf(7, append([]byte{1, 6}, "_start\x00\x00"...))...)
	code := leb(uint64(len(bodies)))
	for _, b := range bodies {
		code = append(append(code, leb(uint64(len(b)))...), b...)
	}
	return append(out, sectionOf(10, code)...)
}

// emptyStart is a module whose _start does nothing.
var emptyStart = moduleOf([]byte{0, 0x0b})

// brTables is a module of funcs functions, each with one br_table of n
// targets, every bound kept: 100 functions of 10,000 targets took wazero
// 10 s and 67 MiB to compile, 20 about 2 s.
func brTables(funcs, n int) []byte {
	body := append([]byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}, leb(uint64(n))...)
	body = append(body, make([]byte, n+1)...)
	body = append(body, 0x0b, 0x0b)
	bodies := make([][]byte, funcs)
	for i := range bodies {
		bodies[i] = body
	}
	return moduleOf(bodies...)
}

// noStart is a valid module that exports no _start: invalid for the
// engine only once wazero has compiled it.
var noStart = []byte("\x00asm\x01\x00\x00\x00")

// TestCompileModule checks a module for a supervisor in a worker
// process: valid modules give their hash, invalid ones the engine's own
// message, a module over a structure bound is refused without a worker,
// and a compile over its time or memory bound, or given up by its caller,
// is ErrCompileLimit or the caller's error.
func TestCompileModule(t *testing.T) {
	inproc, err := wasm.New(wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close(context.Background())
	_, invalidMsg := inproc.Compile(context.Background(), noStart)
	if invalidMsg == nil {
		t.Fatal("a module without _start compiled in-process")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		bounds   wasm.Bounds
		ctx      context.Context
		module   []byte
		want     error  // nil: success
		says     string // the error's telltale
		compiles int64  // compiles run in a worker
	}{
		{"valid", wasm.Bounds{}, context.Background(), emptyStart, nil, "", 1},
		{"invalid after compiling", wasm.Bounds{}, context.Background(), noStart, wasm.ErrInvalidModule, invalidMsg.Error(), 1},
		{"over a structure bound", wasm.Bounds{MaxFunctionLocals: 10}, context.Background(),
			moduleOf([]byte{1, 20, 0x7f, 0x0b}), wasm.ErrInvalidModule, "wasm bound MaxFunctionLocals", 0},
		{"not WebAssembly", wasm.Bounds{}, context.Background(), []byte("\x00asn\x01\x00\x00\x00"), wasm.ErrInvalidModule, "magic", 0},
		{"compile timeout", wasm.Bounds{CompileTimeout: time.Nanosecond}, context.Background(), emptyStart, wasm.ErrCompileLimit,
			"took more than 1ns to compile", 0},
		{"compile memory", wasm.Bounds{CompileMemoryBytes: 1 << 20}, context.Background(), brTables(20, 10_000), wasm.ErrCompileLimit,
			"more than 1 MiB of memory to compile", 1},
		{"caller gone", wasm.Bounds{}, cancelled, emptyStart, context.Canceled, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "compile memory" && raceEnabled {
				t.Skip("the race detector's worker keeps its RLIMIT_DATA")
			}
			p := newPool(t, Config{Workers: 1, WASM: wasm.Config{Bounds: tt.bounds}})
			h, err := p.CompileModule(tt.ctx, tt.module)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("CompileModule: %v", err)
			case tt.want == nil && (h != hashHex(tt.module) || !p.HasModule(h)):
				t.Fatalf("hash %q, held %v", h, p.HasModule(h))
			case tt.want != nil && (!errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says)):
				t.Fatalf("CompileModule: %v, want %v saying %q", err, tt.want, tt.says)
			case tt.want != nil && p.HasModule(hashHex(tt.module)):
				t.Fatal("a refused module is held")
			}
			if n := p.Stats().ModuleCompiles; n != tt.compiles {
				t.Fatalf("%d compiles in workers, want %d", n, tt.compiles)
			}
			if tt.compiles > 0 && int(p.compiler.lastPID.Load()) == os.Getpid() {
				t.Fatal("the module was compiled in the supervisor")
			}
		})
	}
}

// TestCompileModuleOnce: a module checked once is not compiled again,
// and the worker that compiled it runs it without compiling it again.
func TestCompileModuleOnce(t *testing.T) {
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	for i := range 3 {
		if _, err := p.CompileModule(context.Background(), emptyStart); err != nil {
			t.Fatal(err)
		}
		if s := p.Stats(); s.ModuleCompiles != 1 || s.ModuleHits != int64(i) {
			t.Fatalf("after %d calls: %d compiles, %d hits", i+1, s.ModuleCompiles, s.ModuleHits)
		}
	}
	p.mu.Lock()
	for w := range p.procs {
		if !w.holds(hashHex(emptyStart)) {
			t.Error("the worker that compiled the module does not hold it")
		}
	}
	p.mu.Unlock()
	job := newWASMJob(t, nil, `null`, func(j *ptcruntime.Job) { j.ModuleSHA256 = hashHex(emptyStart) })
	if out := p.Run(context.Background(), job); out.Err != nil {
		t.Fatalf("a checked module run by hash: %v", out.Err)
	}
}

// TestCompileModuleStopped: a compile every caller gave up on is
// stopped — its worker killed — and the supervisor's own CPU time and
// heap stay out of it: the worker did the compiling.
func TestCompileModuleStopped(t *testing.T) {
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	slow := brTables(100, 10_000)
	sent := make(chan struct{})
	p.compiler.sent = func() { close(sent) }
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.CompileModule(ctx, slow)
		errc <- err
	}()
	<-sent
	p.compiler.mu.Lock()
	call := p.compiler.inflight[hashHex(slow)]
	p.compiler.mu.Unlock()
	pid := int(p.compiler.lastPID.Load())
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("CompileModule: %v, want the caller's error", err)
	}
	<-call.done
	if !errors.Is(call.err, wasm.ErrCompileLimit) || !strings.Contains(call.err.Error(), "gave up") {
		t.Fatalf("the compile ended with %v", call.err)
	}
	if p.Stats().Killed != 1 || pid == os.Getpid() {
		t.Fatalf("killed %d workers; compiled in pid %d (supervisor %d)", p.Stats().Killed, pid, os.Getpid())
	}

	// The next request compiles afresh, in a worker: the supervisor's CPU
	// time and heap grow far less than the worker's CPU time.
	q := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	mid := brTables(10, 10_000)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	self0 := cpuOf(t, os.Getpid())
	if _, err := q.CompileModule(context.Background(), mid); err != nil {
		t.Fatalf("CompileModule: %v", err)
	}
	self := cpuOf(t, os.Getpid()) - self0
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	worker := cpuOf(t, int(q.compiler.lastPID.Load()))
	if self >= worker {
		t.Fatalf("the supervisor used %s of CPU, the compiling worker %s", self, worker)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("the supervisor allocated %d bytes while a worker compiled", alloc)
	}
}

// cpuOf returns the CPU time (user and system) process pid has used.
func cpuOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100
}

// hashHex is the hex SHA-256 of b.
func hashHex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestRunCompileLimit: a module a worker compiles for its execution (not
// checked first) that needs more than the compile memory bound ends as
// the engine ends a compile over its limit in-process: SYNTAX_ERROR
// wrapping wasm.ErrCompileLimit.
func TestRunCompileLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's worker keeps its RLIMIT_DATA")
	}
	p := newPool(t, Config{Workers: 1, WASM: wasm.Config{Bounds: wasm.Bounds{CompileMemoryBytes: 1 << 20}}})
	out := p.Run(context.Background(), newWASMJob(t, brTables(20, 10_000), `null`, nil))
	if out.Err == nil || out.Err.Kind != fault.KindSyntax || !errors.Is(out.Err, wasm.ErrCompileLimit) ||
		!strings.Contains(out.Err.Message, "of memory to compile") {
		t.Fatalf("run: %v, want SYNTAX_ERROR wrapping ErrCompileLimit", out.Err)
	}
}

// TestCompileWorkerKilled: a worker killed from outside while it compiles
// is the server's failure, not the module's: the error wraps neither
// ErrInvalidModule nor ErrCompileLimit, and the module is not held.
func TestCompileWorkerKilled(t *testing.T) {
	p := newPool(t, Config{Workers: 1, MaxWorkers: 1})
	slow := brTables(100, 10_000)
	p.compiler.sent = func() { _ = killPID(int(p.compiler.lastPID.Load())) }
	_, err := p.CompileModule(context.Background(), slow)
	if err == nil || errors.Is(err, wasm.ErrInvalidModule) || errors.Is(err, wasm.ErrCompileLimit) ||
		!strings.Contains(err.Error(), "ended unexpectedly") {
		t.Fatalf("CompileModule: %v, want the server's failure", err)
	}
	if p.HasModule(hashHex(slow)) {
		t.Fatal("a module whose compile failed is held")
	}
}
