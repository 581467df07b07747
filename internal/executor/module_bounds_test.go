package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/runtime/wasm"
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

// TestModuleCompileClassified checks how a module the engine does not
// compile is refused when a request is prepared: over a structure bound
// INVALID_ARGUMENT naming the bound, over the compile timeout
// RESOURCE_EXHAUSTED, and a caller gone its own code.
func TestModuleCompileClassified(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		cfg    Config
		ctx    context.Context
		module []byte
		code   fault.Code
		says   string
	}{
		{"structure bound", Config{}, context.Background(), localsBombModule, fault.CodeInvalidArgument, "MaxFunctionLocals"},
		{"compile timeout", Config{WASM: wasm.Config{Bounds: wasm.Bounds{CompileTimeout: time.Nanosecond}}}, context.Background(),
			emptyStartModule, fault.CodeResourceExhausted, "to compile"},
		{"caller gone", Config{}, cancelled, emptyStartModule, fault.CodeCanceled, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExecutor(t, tt.cfg)
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
	e := newExecutor(t, Config{})
	if _, err := e.Prepare(core.Request{Script: core.Script{Language: core.LanguageWASM, Module: emptyStartModule}}, limits.Limits{}); err != nil {
		t.Fatalf("a valid module: %v", err)
	}
}
