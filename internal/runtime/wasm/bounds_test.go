package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// TestModuleBoundsRefuseBombs compiles the module structure bombs at the
// sizes that took wazero minutes or gigabytes, on an engine with the
// default bounds: each is refused, naming the bound it crossed, before
// wazero decodes it (wazero would refuse most of them only after
// compiling them, for their missing _start).
func TestModuleBoundsRefuseBombs(t *testing.T) {
	tests := []struct {
		name  string
		bin   []byte
		bound string
	}{
		{"four billion locals in 56 bytes", localsBomb(1<<32 - 1), "MaxFunctionLocals"},
		{"ten million locals", localsBomb(10_000_000), "MaxFunctionLocals"},
		{"locals spread over functions", manyLocalsBomb(100, 40_000), "MaxLocals"},
		{"br_table of 300,000 targets", brTableBomb(300_000), "MaxBranchTargets"},
		{"many br_tables", brTablesBomb(120, 9_000), "MaxBranchTableTargets"},
		{"20,000 nested blocks", nestingBomb(20_000), "MaxNesting"},
		{"3 million types", typesBomb(3_000_000), "MaxTypes"},
		{"a million functions", functionsBomb(1_000_000), "MaxFunctions"},
		{"a million globals", globalsBomb(1_000_000), "MaxGlobals"},
		{"100,000 imports", importsBomb(100_000), "MaxImports"},
		{"100,000 exports", exportsBomb(100_000), "MaxExports"},
		{"a million data segments", dataBomb(1_000_000), "MaxDataSegments"},
		{"100,000 element segments", elementSegmentsBomb(100_000), "MaxElementSegments"},
		{"a million elements", elementsBomb(1_000_000), "MaxElements"},
	}
	e := newEngine(t, Config{MaxModules: 2})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Compile(context.Background(), tt.bin)
			if !errors.Is(err, ErrInvalidModule) || !strings.Contains(err.Error(), "wasm bound "+tt.bound+")") {
				t.Fatalf("Compile(%d bytes) = %v, want ErrInvalidModule naming %s", len(tt.bin), err, tt.bound)
			}
		})
	}
	if got := len(localsBomb(1<<32 - 1)); got != 28 {
		// The attack's 56 bytes carried a _start export and a memory.
		t.Logf("locals bomb is %d bytes", got)
	}
}

// TestModuleBoundsEdges checks every bound at its edge: a module that
// declares exactly the bound passes the structure check, one more is
// refused, naming the bound.
func TestModuleBoundsEdges(t *testing.T) {
	small := Bounds{MaxTypes: 4, MaxParams: 3, MaxFunctions: 5, MaxImports: 2, MaxExports: 3, MaxGlobals: 3,
		MaxFunctionLocals: 6, MaxLocals: 10, MaxFunctionBytes: 64, MaxNesting: 5, MaxBranchTargets: 7,
		MaxBranchTableTargets: 20, MaxDataSegments: 3, MaxDataBytes: 16, MaxElementSegments: 2, MaxElements: 9, MaxNames: 4}
	tests := []struct {
		bound string
		make  func(n int) []byte
		at    int
	}{
		{"MaxTypes", typesBomb, small.MaxTypes},
		{"MaxParams", paramsBomb, small.MaxParams},
		{"MaxFunctions", functionsBomb, small.MaxFunctions},
		{"MaxImports", importsBomb, small.MaxImports},
		{"MaxExports", exportsBomb, small.MaxExports},
		{"MaxGlobals", globalsBomb, small.MaxGlobals},
		{"MaxFunctionLocals", func(n int) []byte { return localsBomb(uint64(n)) }, small.MaxFunctionLocals},
		{"MaxLocals", func(n int) []byte { return manyLocalsBomb(n, 5) }, small.MaxLocals / 5},
		{"MaxFunctionBytes", bodyBytesBomb, small.MaxFunctionBytes},
		{"MaxNesting", func(n int) []byte { return nestingBomb(n - 1) }, small.MaxNesting},
		{"MaxBranchTargets", brTableBomb, small.MaxBranchTargets},
		{"MaxBranchTableTargets", func(n int) []byte { return brTablesBomb(n, 5) }, small.MaxBranchTableTargets / 5},
		{"MaxDataSegments", dataBomb, small.MaxDataSegments},
		{"MaxDataBytes", dataBytesBomb, small.MaxDataBytes},
		{"MaxElementSegments", elementSegmentsBomb, small.MaxElementSegments},
		{"MaxElements", elementsBomb, small.MaxElements},
		{"MaxNames", namesBomb, small.MaxNames},
	}
	for _, tt := range tests {
		t.Run(tt.bound, func(t *testing.T) {
			if err := checkStructure(tt.make(tt.at), small); err != nil {
				t.Fatalf("at the bound (%d): %v", tt.at, err)
			}
			err := checkStructure(tt.make(tt.at+1), small)
			if !errors.Is(err, ErrInvalidModule) || !strings.Contains(err.Error(), "wasm bound "+tt.bound+")") {
				t.Fatalf("over the bound (%d): %v, want ErrInvalidModule naming %s", tt.at+1, err, tt.bound)
			}
		})
	}
}

// TestModuleBoundsMalformed checks that the structure check refuses what
// it cannot read, with ErrInvalidModule, and never panics.
func TestModuleBoundsMalformed(t *testing.T) {
	tests := []struct {
		name string
		bin  []byte
	}{
		{"no magic", []byte("not wasm")},
		{"section past the end", []byte("\x00asm\x01\x00\x00\x00\x01\x10\x00")},
		{"unknown section", bombModule(section(14, []byte{0}))},
		{"body without end", bombModule(emptyType, funcDecls(1), codeOf([]byte{0, 0x01}))},
		{"unknown instruction", bombModule(emptyType, funcDecls(1), codeOf([]byte{0, 0xff, 0x0b}))},
		{"bytes after the end", bombModule(emptyType, funcDecls(1), codeOf([]byte{0, 0x0b, 0x01}))},
		{"truncated br_table", bombModule(emptyType, funcDecls(1), codeOf([]byte{0, 0x0e, 0x05, 0x00}))},
		{"count larger than the section", bombModule(section(1, []byte{0xff, 0xff, 0x03}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkStructure(tt.bin, defaultBounds()); !errors.Is(err, ErrInvalidModule) {
				t.Fatalf("checkStructure = %v, want ErrInvalidModule", err)
			}
		})
	}
}

// TestCompileTimeout checks that a module that takes longer than the
// compile timeout to compile is refused with ErrCompileLimit, and that
// the engine compiles it afresh when asked again.
func TestCompileTimeout(t *testing.T) {
	e := newEngine(t, Config{Bounds: Bounds{CompileTimeout: time.Nanosecond}})
	bin := writeModule("1")
	for i := 0; i < 2; i++ {
		_, err := e.Compile(context.Background(), bin)
		if !errors.Is(err, ErrCompileLimit) || errors.Is(err, ErrInvalidModule) {
			t.Fatalf("Compile = %v, want ErrCompileLimit", err)
		}
	}
	if st := e.stats(); st.Compiles != 2 || st.Cached != 0 {
		t.Fatalf("stats = %+v, want 2 compiles and nothing cached", st)
	}
	// Run through runtime.Engine, the module is not runnable here.
	j, _ := job(bin, "", limits.Limits{Timeout: time.Minute}, testTools(t))
	out := e.Run(context.Background(), j)
	if out.Err == nil || out.Err.Kind != fault.KindSyntax || !errors.Is(out.Err, ErrCompileLimit) {
		t.Fatalf("Run = %v, want SYNTAX_ERROR wrapping ErrCompileLimit", out.Err)
	}
}

// TestCompileStopsWhenCallersGiveUp checks that a compilation nobody
// waits for any more is stopped and forgotten: the compile goroutine
// ends although it never got a compile slot, and the module is compiled
// afresh for the next request.
func TestCompileStopsWhenCallersGiveUp(t *testing.T) {
	e := newEngine(t, Config{Bounds: Bounds{MaxConcurrentCompiles: 1}})
	e.compileSlots <- struct{}{} // every compile slot is taken
	bin := writeModule("1")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	// The goroutine ends when Compile returns, after the cancel below.
	go func() {
		_, err := e.Compile(ctx, bin)
		errc <- err
	}()
	// Wait until the compilation is registered, then give up.
	for !e.compilingNow(hashOf(bin)) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Compile = %v, want context.Canceled", err)
	}
	e.compiling.Wait() // the compilation ended without a slot
	if st := e.stats(); st.Compiles != 1 || st.Cached != 0 {
		t.Fatalf("stats = %+v, want 1 stopped compile and nothing cached", st)
	}
	<-e.compileSlots
	if _, err := e.Compile(context.Background(), bin); err != nil {
		t.Fatalf("Compile after the stop: %v", err)
	}
}

// compilingNow reports whether the module with the given hash is being
// compiled.
func (e *Engine) compilingNow(hash string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ent, ok := e.entries[hash]
	if !ok {
		return false
	}
	select {
	case <-ent.done:
		return false
	default:
		return true
	}
}

// TestCacheBytesBound checks that the cache keeps compiled modules within
// MaxCacheBytes, evicting the least recently used, and keeps the module
// just compiled even when it alone is over the bound.
func TestCacheBytesBound(t *testing.T) {
	a, b := writeModule("1"), writeModule("22")
	e := newEngine(t, Config{MaxCacheBytes: compiledCost(len(a)) + compiledCost(len(b)) - 1})
	for _, bin := range [][]byte{a, b} {
		if _, err := e.Compile(context.Background(), bin); err != nil {
			t.Fatal(err)
		}
	}
	if e.Has(hashOf(a)) || !e.Has(hashOf(b)) {
		t.Fatalf("cached a %v, b %v; want only b", e.Has(hashOf(a)), e.Has(hashOf(b)))
	}
	if st := e.stats(); st.Evictions != 1 || st.Cached != 1 || st.CachedBytes != compiledCost(len(b)) {
		t.Fatalf("stats = %+v, want one eviction and b's cost cached", st)
	}
	tiny := newEngine(t, Config{MaxCacheBytes: 1})
	if _, err := tiny.Compile(context.Background(), a); err != nil || !tiny.Has(hashOf(a)) {
		t.Fatalf("a module over the whole bound: Compile %v, cached %v; want it kept", err, tiny.Has(hashOf(a)))
	}
}

// TestConfigCheckModule: the checks that need no compiler refuse a module
// too large or over a structure bound, naming what it crossed, and pass a
// module within them — without compiling anything.
func TestConfigCheckModule(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		module []byte
		says   string // empty: accepted
	}{
		{"within the bounds", Config{}, nestingBomb(10), ""},
		{"too large", Config{MaxModuleBytes: 16}, nestingBomb(10), "more than the 16 allowed"},
		{"over a structure bound", Config{Bounds: Bounds{MaxNesting: 4}}, nestingBomb(10), "wasm bound MaxNesting"},
		{"not WebAssembly", Config{}, []byte("\x00asn\x01\x00\x00\x00"), "magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.CheckModule(tt.module)
			switch {
			case tt.says == "" && err != nil:
				t.Fatalf("CheckModule: %v", err)
			case tt.says != "" && (!errors.Is(err, ErrInvalidModule) || !strings.Contains(err.Error(), tt.says)):
				t.Fatalf("CheckModule: %v, want ErrInvalidModule saying %q", err, tt.says)
			}
		})
	}
}
