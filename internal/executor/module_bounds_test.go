package executor

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/wasm"
	"github.com/ptcrun/ptc/internal/runtime/worker"
)

// localsBombModule is a module of 28 bytes whose one function declares
// 2^32-1 locals: wazero allocated them all before it refused anything.
var localsBombModule = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // type () -> ()
	"\x03\x02\x01\x00" + // one function of type 0
	"\x0a\x0a\x01\x08\x01\xff\xff\xff\xff\x0f\x7f\x0b") // 2^32-1 i32 locals

// emptyStartModule exports an empty _start.
var emptyStartModule = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" +
	"\x03\x02\x01\x00" +
	"\x07\x0a\x01\x06_start\x00\x00" +
	"\x0a\x04\x01\x02\x00\x0b")

// workerConfig is an executor configuration whose scripts and modules
// run in worker processes (one kept warm).
func workerConfig(cfg Config) Config {
	cfg.Workers = &worker.Config{Workers: 1, MaxWorkers: 2, Logger: slog.New(slog.DiscardHandler)}
	return cfg
}

// TestModuleCompileClassified checks how a module the engine does not
// compile is refused when a request is prepared, in-process and with
// worker processes alike: over a structure bound INVALID_ARGUMENT naming
// the bound, not a module the engine can run INVALID_ARGUMENT with the
// engine's words, over the compile timeout or (in a worker) the compile
// memory bound RESOURCE_EXHAUSTED, and a caller gone its own code.
func TestModuleCompileClassified(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	noStart := []byte("\x00asm\x01\x00\x00\x00")
	tests := []struct {
		name       string
		cfg        Config
		ctx        context.Context
		module     []byte
		code       fault.Code
		says       string
		workerOnly bool
	}{
		{"structure bound", Config{}, context.Background(), localsBombModule, fault.CodeInvalidArgument, "MaxFunctionLocals", false},
		{"no _start", Config{}, context.Background(), noStart, fault.CodeInvalidArgument, "exports no _start function", false},
		{"compile timeout", Config{WASM: wasm.Config{Bounds: wasm.Bounds{CompileTimeout: time.Nanosecond}}}, context.Background(),
			emptyStartModule, fault.CodeResourceExhausted, "to compile", false},
		{"compile memory", Config{WASM: wasm.Config{Bounds: wasm.Bounds{CompileMemoryBytes: 1 << 20}}}, context.Background(),
			brTablesModule(20, 10_000), fault.CodeResourceExhausted, "of memory to compile", true},
		{"caller gone", Config{}, cancelled, emptyStartModule, fault.CodeCanceled, "cancelled", false},
	}
	for _, mode := range []string{"inprocess", "worker"} {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				cfg := tt.cfg
				if mode == "worker" {
					cfg = workerConfig(cfg)
				} else if tt.workerOnly {
					t.Skip("the compile memory bound is a worker's")
				}
				if tt.workerOnly && raceEnabled {
					t.Skip("the race detector's worker keeps its RLIMIT_DATA")
				}
				e := newExecutor(t, cfg)
				req := core.Request{Script: core.Script{Language: core.LanguageWASM, Module: tt.module}}
				_, err := e.PrepareContext(tt.ctx, req, limits.Limits{})
				if err == nil || err.Code != tt.code || !strings.Contains(err.Message, tt.says) {
					t.Fatalf("PrepareContext = %v, want %v saying %q", err, tt.code, tt.says)
				}
				if _, err := e.LoadModule(tt.ctx, tt.module); err == nil || err.Code != tt.code {
					t.Fatalf("LoadModule = %v, want %v", err, tt.code)
				}
			})
		}
		t.Run(mode+"/valid", func(t *testing.T) {
			cfg := Config{}
			if mode == "worker" {
				cfg = workerConfig(cfg)
			}
			e := newExecutor(t, cfg)
			if _, err := e.Prepare(core.Request{Script: core.Script{Language: core.LanguageWASM, Module: emptyStartModule}}, limits.Limits{}); err != nil {
				t.Fatalf("a valid module: %v", err)
			}
		})
	}
}

// TestModuleCompiledInWorker: with worker processes, this process never
// compiles a module — not to check a request, not to run it, not to
// resume it: the worker pool compiles it in a worker, once, and runs it
// there; this process's WebAssembly engine is never made.
func TestModuleCompiledInWorker(t *testing.T) {
	e := newExecutor(t, workerConfig(Config{}))
	mod := brTablesModule(10, 10_000)
	req := core.Request{Script: core.Script{Language: core.LanguageWASM, Module: mod}}
	for i := range 2 {
		res, err := e.Execute(context.Background(), req, limits.Limits{})
		if err != nil || res.Error != nil {
			t.Fatalf("run %d: %v %v", i, err, res.Error)
		}
	}
	h, err := e.LoadModule(context.Background(), mod)
	if err != nil {
		t.Fatal(err)
	}
	byHash := core.Request{Script: core.Script{Language: core.LanguageWASM, ModuleSHA256: h}}
	if res, err := e.Execute(context.Background(), byHash, limits.Limits{}); err != nil || res.Error != nil {
		t.Fatalf("run by hash: %v %v", err, res.Error)
	}
	if s := e.Workers().Stats(); s.ModuleCompiles != 1 || s.ModuleHits != 2 {
		t.Fatalf("%d compiles in workers, %d hits; want 1 and 2", s.ModuleCompiles, s.ModuleHits)
	}
	if e.wasm != nil {
		t.Fatal("the executor made an in-process WebAssembly engine")
	}
}

// brTablesModule is a module of funcs functions (the first exported as
// _start), each with one br_table of n targets: every bound kept, and
// about 0.2 s of compiling per function.
func brTablesModule(funcs, n int) []byte {
	uleb := func(v uint64) []byte {
		var out []byte
		for ; v >= 0x80; v >>= 7 {
			out = append(out, byte(v)|0x80)
		}
		return append(out, byte(v))
	}
	section := func(id byte, b []byte) []byte { return append(append([]byte{id}, uleb(uint64(len(b)))...), b...) }
	body := append([]byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}, uleb(uint64(n))...)
	body = append(body, make([]byte, n+1)...)
	body = append(body, 0x0b, 0x0b)
	decls, code := uleb(uint64(funcs)), uleb(uint64(funcs))
	for range funcs {
		decls = append(decls, 0)
		code = append(append(code, uleb(uint64(len(body)))...), body...)
	}
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, section(1, []byte{1, 0x60, 0, 0})...)
	out = append(out, section(3, decls)...)
	out = append(out, section(7, append([]byte{1, 6}, "_start\x00\x00"...))...)
	return append(out, section(10, code)...)
}

// TestModuleDigestPerTenant: a module is run by its digest alone only for
// a tenant that sent its bytes; to another tenant the server answers as
// for a module it does not hold, so a tenant can neither run another's
// module nor learn that it was sent. In-process and in worker processes.
func TestModuleDigestPerTenant(t *testing.T) {
	for _, mode := range []string{"inprocess", "worker"} {
		t.Run(mode, func(t *testing.T) {
			cfg := Config{}
			if mode == "worker" {
				cfg = workerConfig(cfg)
			}
			e := newExecutor(t, cfg)
			sent := core.Request{Tenant: "a", Script: core.Script{Language: core.LanguageWASM, Module: emptyStartModule}}
			res, err := e.Execute(context.Background(), sent, limits.Limits{})
			if err != nil || res.Error != nil {
				t.Fatalf("tenant a, the bytes: %v %v", err, res.Error)
			}
			digest := fmt.Sprintf("%x", sha256.Sum256(emptyStartModule))
			byDigest := func(tenant string) *fault.Error {
				_, err := e.Execute(context.Background(), core.Request{Tenant: tenant, Script: core.Script{Language: core.LanguageWASM, ModuleSHA256: digest}}, limits.Limits{})
				return err
			}
			if err := byDigest("a"); err != nil {
				t.Fatalf("tenant a, the digest: %v", err)
			}
			for _, other := range []string{"b", ""} {
				if err := byDigest(other); err == nil || err.Code != fault.CodeFailedPrecondition || err.Reason != fault.ReasonModuleMissing {
					t.Fatalf("tenant %q, a's digest: %v, want FAILED_PRECONDITION (module missing)", other, err)
				}
			}
			// The untenanted caller that loads the module runs it by
			// digest too; tenant b still does not.
			if _, err := e.LoadModule(context.Background(), emptyStartModule); err != nil {
				t.Fatal(err)
			}
			if err := byDigest(""); err != nil {
				t.Fatalf("the untenanted caller after LoadModule: %v", err)
			}
			if err := byDigest("b"); err == nil {
				t.Fatal("tenant b ran the module it never sent")
			}
		})
	}
}
