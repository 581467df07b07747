package wasm

import (
	"fmt"
	"time"
)

// Bounds bounds the structure of a module and the work of compiling it.
// wazero decodes, validates and compiles a module with memory and time that
// grow with what its sections declare — a 56-byte function body that
// declares four billion locals makes it allocate gigabytes, a br_table of a
// few hundred thousand targets or a few thousand nested blocks take it
// minutes of CPU — and it cannot be interrupted while it does. The engine
// therefore reads every section first (checkStructure, linear in the
// module's bytes, allocating nothing in proportion to what the module
// declares) and refuses a module over any bound before wazero sees it.
//
// A zero field means its default (defaultBounds); the defaults are well
// above what toolchains emit (a Go guest of 2 MiB has about 2,000
// functions, 40 types, 9 globals, at most 8 locals a function, a nesting
// depth of 63 and br_tables of at most 1,000 targets).
type Bounds struct {
	// MaxTypes bounds the function types of the type section.
	MaxTypes int
	// MaxParams bounds the parameters, and separately the results, of one
	// function type.
	MaxParams int
	// MaxFunctions bounds the functions, imported and defined.
	MaxFunctions int
	// MaxImports bounds the imports.
	MaxImports int
	// MaxExports bounds the exports.
	MaxExports int
	// MaxGlobals bounds the globals defined by the module.
	MaxGlobals int
	// MaxFunctionLocals bounds the locals one function declares
	// (parameters not counted).
	MaxFunctionLocals int
	// MaxLocals bounds the locals of all functions together.
	MaxLocals int
	// MaxFunctionBytes bounds the size of one function body.
	MaxFunctionBytes int
	// MaxNesting bounds how deeply block, loop and if nest in a function.
	MaxNesting int
	// MaxBranchTargets bounds the targets of one br_table.
	MaxBranchTargets int
	// MaxBranchTableTargets bounds the targets of all br_tables of a
	// module together.
	MaxBranchTableTargets int
	// MaxDataSegments bounds the data segments.
	MaxDataSegments int
	// MaxDataBytes bounds the bytes of all data segments together.
	MaxDataBytes int
	// MaxElementSegments bounds the element segments.
	MaxElementSegments int
	// MaxElements bounds the elements of all element segments together.
	MaxElements int
	// MaxNames bounds the entries of the "name" custom section (function
	// and local names), which wazero decodes into a map.
	MaxNames int
	// CompileTimeout bounds the time one module may take to compile
	// (default 60s; a Go guest of 3.3 MB takes about 2 s). A compile that
	// takes longer is abandoned; the module is refused with
	// ErrCompileLimit.
	CompileTimeout time.Duration
	// MaxConcurrentCompiles bounds the compilations running at once
	// (default 2); more wait for a turn, within their caller's context.
	MaxConcurrentCompiles int
	// CompileMemoryBytes bounds the memory a worker process may add while
	// it compiles a module (default 1 GiB; a module at every bound takes
	// about 70 MiB, a Go guest of 3.3 MB about 60 MiB). The engine itself
	// does not apply it: the worker pool that compiles modules for a
	// supervisor lowers the worker's RLIMIT_DATA to its data segment plus
	// this while wazero runs, and a compile that needs more ends the
	// worker and fails with ErrCompileLimit.
	CompileMemoryBytes int64
}

// defaultBounds returns the bounds an Engine applies when its Config sets
// none (Config.WithDefaults gives them too).
func defaultBounds() Bounds {
	return Bounds{
		MaxTypes:              10_000,
		MaxParams:             1_000,
		MaxFunctions:          100_000,
		MaxImports:            1_000,
		MaxExports:            10_000,
		MaxGlobals:            10_000,
		MaxFunctionLocals:     50_000,
		MaxLocals:             1_000_000,
		MaxFunctionBytes:      4 << 20,
		MaxNesting:            2_000,
		MaxBranchTargets:      10_000,
		MaxBranchTableTargets: 1_000_000,
		MaxDataSegments:       500_000,
		MaxDataBytes:          64 << 20,
		MaxElementSegments:    10_000,
		MaxElements:           200_000,
		MaxNames:              200_000,
		CompileTimeout:        60 * time.Second,
		MaxConcurrentCompiles: 2,
		CompileMemoryBytes:    1 << 30,
	}
}

// withDefaults fills the zero fields of b from defaultBounds.
func (b Bounds) withDefaults() Bounds {
	d := defaultBounds()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&b.MaxTypes, d.MaxTypes)
	fill(&b.MaxParams, d.MaxParams)
	fill(&b.MaxFunctions, d.MaxFunctions)
	fill(&b.MaxImports, d.MaxImports)
	fill(&b.MaxExports, d.MaxExports)
	fill(&b.MaxGlobals, d.MaxGlobals)
	fill(&b.MaxFunctionLocals, d.MaxFunctionLocals)
	fill(&b.MaxLocals, d.MaxLocals)
	fill(&b.MaxFunctionBytes, d.MaxFunctionBytes)
	fill(&b.MaxNesting, d.MaxNesting)
	fill(&b.MaxBranchTargets, d.MaxBranchTargets)
	fill(&b.MaxBranchTableTargets, d.MaxBranchTableTargets)
	fill(&b.MaxDataSegments, d.MaxDataSegments)
	fill(&b.MaxDataBytes, d.MaxDataBytes)
	fill(&b.MaxElementSegments, d.MaxElementSegments)
	fill(&b.MaxElements, d.MaxElements)
	fill(&b.MaxNames, d.MaxNames)
	fill(&b.MaxConcurrentCompiles, d.MaxConcurrentCompiles)
	if b.CompileTimeout <= 0 {
		b.CompileTimeout = d.CompileTimeout
	}
	if b.CompileMemoryBytes <= 0 {
		b.CompileMemoryBytes = d.CompileMemoryBytes
	}
	return b
}

// over returns the error of a module whose what is n, more than max.
func over(what string, n uint64, max int, knob string) error {
	return fmt.Errorf("%w: %s %d, more than the %d allowed (wasm bound %s); split the module or simplify its code",
		ErrInvalidModule, what, n, max, knob)
}

// CheckModule applies the checks that need no compiler to a module: its
// size (MaxModuleBytes) and its structure (Bounds), with c's zero fields
// at their defaults. It reads the module once, allocates nothing in
// proportion to what it declares, and returns an error wrapping
// ErrInvalidModule for a module over a bound. A supervisor that has
// modules compiled elsewhere (in a worker process) calls it first, so
// that the cheap refusals never cost a process.
func (c Config) CheckModule(module []byte) error {
	c = c.WithDefaults()
	if len(module) > c.MaxModuleBytes {
		return fmt.Errorf("%w: module is %d bytes, more than the %d allowed", ErrInvalidModule, len(module), c.MaxModuleBytes)
	}
	return checkStructure(module, c.Bounds)
}
