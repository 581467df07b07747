package wasm

import (
	"context"
	"errors"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// FuzzScanModule checks that the section scanner never panics or reads
// outside its input.
func FuzzScanModule(f *testing.F) {
	f.Add(writeModule("1"))
	f.Add(bigMemoryModule(3))
	f.Add(abiModule(true, abiData, func(abiFuncs) [][]byte { return nil }))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, bin []byte) {
		shape, err := scanModule(bin)
		if err == nil && uint64(len(shape.imports)) > uint64(len(bin)) {
			t.Fatalf("%d imports from %d bytes", len(shape.imports), len(bin))
		}
	})
}

// FuzzCompile checks that any bytes either compile or fail with
// ErrInvalidModule, and that what compiles runs to a classified outcome.
func FuzzCompile(f *testing.F) {
	f.Add(writeModule("1"))
	f.Add(writeModule("", opUnreachable))
	f.Add(exitModule("x", 2))
	f.Add([]byte("\x00asm"))
	e := newEngine(f, Config{MaxModules: 4})
	f.Fuzz(func(t *testing.T, bin []byte) {
		_, err := e.Compile(context.Background(), bin)
		if err != nil {
			if !errors.Is(err, ErrInvalidModule) {
				t.Fatalf("Compile error %v does not wrap ErrInvalidModule", err)
			}
			return
		}
		j, _ := job(bin, "", limits.Limits{Timeout: 200e6, MemoryBytes: 16 << 20}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err != nil && out.Err.Kind == fault.KindInternal {
			t.Fatalf("internal error: %v", out.Err)
		}
	})
}

// FuzzHostABI calls ptc_v1 with guest-chosen pointers and lengths: every
// combination must end as a result or a SCRIPT_ERROR trap, never a host
// failure.
func FuzzHostABI(f *testing.F) {
	f.Add(int32(100), int32(4), int32(120), int32(7), int32(0), int32(300), int32(1000), false)
	f.Add(int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), int32(-1), true)
	f.Add(int32(140), int32(48), int32(0), int32(0), int32(65528), int32(65000), int32(536), true)
	f.Add(int32(0), int32(65536), int32(0), int32(0), int32(0), int32(0), int32(0), false)
	e := newEngine(f, Config{MaxModules: 4})
	f.Fuzz(func(t *testing.T, namePtr, nameLen, argsPtr, argsLen, outPtr, bufPtr, bufLen int32, batch bool) {
		mod := abiModule(true, abiData, func(fs abiFuncs) [][]byte {
			var body [][]byte
			if batch {
				body = append(body, i32c(namePtr), i32c(nameLen), i32c(outPtr), call(fs.batch), opDrop)
			} else {
				body = append(body, i32c(namePtr), i32c(nameLen), i32c(argsPtr), i32c(argsLen), i32c(outPtr), call(fs.call), opDrop)
			}
			// Read the handle back from wherever the out record went.
			body = append(body, append(i32c(outPtr), 0x28, 0x02, 0x00), i32c(bufPtr), i32c(bufLen), call(fs.read), opDrop)
			return body
		})
		j, _ := job(mod, "", limits.Limits{}, testTools(t))
		out := e.Run(context.Background(), j)
		if out.Err != nil && out.Err.Kind != fault.KindScript {
			t.Fatalf("outcome %v, want success or SCRIPT_ERROR", out.Err)
		}
	})
}

// FuzzCheckStructure checks that the structure check never panics, reads
// nothing outside its input, and refuses only with ErrInvalidModule.
func FuzzCheckStructure(f *testing.F) {
	f.Add(writeModule("1"))
	f.Add(localsBomb(1<<32 - 1))
	f.Add(brTableBomb(20))
	f.Add(nestingBomb(20))
	f.Add(elementsBomb(3))
	f.Add(namesBomb(3))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x0a\x05\x01\x03\x00\xfd\x0c"))
	small := Bounds{MaxTypes: 8, MaxParams: 4, MaxFunctions: 8, MaxImports: 8, MaxExports: 8, MaxGlobals: 8,
		MaxFunctionLocals: 8, MaxLocals: 16, MaxFunctionBytes: 256, MaxNesting: 8, MaxBranchTargets: 8,
		MaxBranchTableTargets: 16, MaxDataSegments: 8, MaxDataBytes: 64, MaxElementSegments: 8, MaxElements: 8, MaxNames: 8}
	f.Fuzz(func(t *testing.T, bin []byte) {
		for _, b := range []Bounds{defaultBounds(), small} {
			if err := checkStructure(bin, b); err != nil && !errors.Is(err, ErrInvalidModule) {
				t.Fatalf("checkStructure error %v does not wrap ErrInvalidModule", err)
			}
		}
	})
}
