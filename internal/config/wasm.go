package config

import (
	"flag"
	"time"
)

// WASM configures the WebAssembly engine: the compile limits and the
// structure bounds a module must keep (docs/wasm-abi.md, section 4). The
// bounds not listed here keep the engine's defaults.
type WASM struct {
	// CompileTimeout bounds the time one module may take to compile.
	CompileTimeout Duration `yaml:"compile_timeout"`
	// MaxConcurrentCompiles bounds the compilations running at once.
	MaxConcurrentCompiles int `yaml:"max_concurrent_compiles"`
	// CompileMemory bounds the memory a worker process may add while it
	// compiles a module.
	CompileMemory ByteSize `yaml:"compile_memory"`
	// CacheBytes bounds the memory of the compiled modules kept.
	CacheBytes ByteSize `yaml:"cache_bytes"`
	// MaxFunctions bounds a module's functions, imported and defined.
	MaxFunctions int `yaml:"max_functions"`
	// MaxFunctionBytes bounds the size of one function body.
	MaxFunctionBytes ByteSize `yaml:"max_function_bytes"`
	// MaxNesting bounds the nesting of blocks in one function.
	MaxNesting int `yaml:"max_nesting"`
	// MaxBranchTargets bounds the targets of one br_table.
	MaxBranchTargets int `yaml:"max_branch_targets"`
	// MaxDataSegments bounds a module's data segments.
	MaxDataSegments int `yaml:"max_data_segments"`
}

// defaultWASM is the wasm section's defaults: the engine's
// (internal/runtime/wasm's Config.WithDefaults; internal/service tests that the
// two agree).
func defaultWASM() WASM {
	return WASM{
		CompileTimeout:        Duration(60 * time.Second),
		MaxConcurrentCompiles: 2,
		CompileMemory:         1 << 30,
		CacheBytes:            512 << 20,
		MaxFunctions:          100_000,
		MaxFunctionBytes:      4 << 20,
		MaxNesting:            2_000,
		MaxBranchTargets:      10_000,
		MaxDataSegments:       500_000,
	}
}

func wasmSettings() []setting {
	return []setting{
		{"wasm.compile_timeout", "longest a WebAssembly module may take to compile", func(c *Config) flag.Value { return &c.WASM.CompileTimeout }},
		{"wasm.max_concurrent_compiles", "WebAssembly compilations running at once", func(c *Config) flag.Value { return intValue{&c.WASM.MaxConcurrentCompiles} }},
		{"wasm.compile_memory", "memory a worker may add while it compiles a WebAssembly module", func(c *Config) flag.Value { return &c.WASM.CompileMemory }},
		{"wasm.cache_bytes", "memory of the compiled WebAssembly modules kept", func(c *Config) flag.Value { return &c.WASM.CacheBytes }},
		{"wasm.max_functions", "functions of a WebAssembly module", func(c *Config) flag.Value { return intValue{&c.WASM.MaxFunctions} }},
		{"wasm.max_function_bytes", "size of one WebAssembly function body", func(c *Config) flag.Value { return &c.WASM.MaxFunctionBytes }},
		{"wasm.max_nesting", "nesting of blocks in one WebAssembly function", func(c *Config) flag.Value { return intValue{&c.WASM.MaxNesting} }},
		{"wasm.max_branch_targets", "targets of one WebAssembly br_table", func(c *Config) flag.Value { return intValue{&c.WASM.MaxBranchTargets} }},
		{"wasm.max_data_segments", "data segments of a WebAssembly module", func(c *Config) flag.Value { return intValue{&c.WASM.MaxDataSegments} }},
	}
}

func (w WASM) validate() *Error {
	for _, v := range []struct {
		key string
		n   int64
	}{
		{"wasm.compile_timeout", int64(w.CompileTimeout)},
		{"wasm.max_concurrent_compiles", int64(w.MaxConcurrentCompiles)},
		{"wasm.compile_memory", int64(w.CompileMemory)},
		{"wasm.cache_bytes", int64(w.CacheBytes)},
		{"wasm.max_functions", int64(w.MaxFunctions)},
		{"wasm.max_function_bytes", int64(w.MaxFunctionBytes)},
		{"wasm.max_nesting", int64(w.MaxNesting)},
		{"wasm.max_branch_targets", int64(w.MaxBranchTargets)},
		{"wasm.max_data_segments", int64(w.MaxDataSegments)},
	} {
		if v.n <= 0 {
			return keyError(v.key, "%d is not above 0: leave it out for the default", v.n)
		}
	}
	if int64(w.MaxFunctionBytes) > 1<<30 {
		return keyError("wasm.max_function_bytes", "%d is over 1GiB: a module is far smaller", int64(w.MaxFunctionBytes))
	}
	return nil
}
