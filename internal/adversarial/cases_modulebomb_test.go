package adversarial

import (
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
)

// famModuleBomb: modules whose structure costs a compiler far more than
// their size — locals, br_table targets, nesting, counts of types,
// functions, globals, imports and exports, segments — each refused
// before ptcd compiles it.
const famModuleBomb family = "modulebomb"

// moduleBombCases: hand-built modules that took ptcd gigabytes or minutes
// of CPU to compile (a 28-byte body declaring 2^32-1 locals made it die
// out of memory). Each must be refused quickly with INVALID_ARGUMENT
// (a structure bound) or RESOURCE_EXHAUSTED (the compile limit), in both
// modes, while ptcd stays small; a module within the bounds that is still
// costly to compile is compiled by a worker in worker mode, never by
// ptcd.
func moduleBombCases() []tcase {
	c := func(name string, module []byte, fast bool) tcase {
		return tcase{name: name, family: famModuleBomb, fast: fast, bound: 15 * time.Second, serverGrowth: 128 * MiB, serverSettle: 64 * MiB,
			req:  wasmReq(module, timeout(5*time.Second), memory(64*MiB)),
			want: refused(codes.InvalidArgument).orRefused(codes.ResourceExhausted)}
	}
	return []tcase{
		c("module-locals-bomb-56-bytes", localsBomb(1<<32-1), true),
		c("module-ten-million-locals", localsBomb(10_000_000), false),
		c("module-locals-in-many-functions", manyLocalsBomb(200, 40_000), false),
		c("module-br-table-300k", brTableBomb(300_000), false),
		c("module-nested-blocks-20k", nestingBomb(20_000), false),
		c("module-three-million-types", typesBomb(3_000_000), false),
		c("module-million-functions", functionsBomb(1_000_000), false),
		c("module-million-globals", globalsBomb(1_000_000), false),
		c("module-100k-imports", importsBomb(100_000), false),
		c("module-100k-exports", exportsBomb(100_000), false),
		c("module-million-data-segments", dataSegmentsBomb(1_000_000), false),
		c("module-million-elements", elementsBomb(1_000_000), false),
		// Within every bound, and still seconds of CPU and tens of MiB to
		// compile (100 br_tables of 10,000 targets: 10 s and 67 MiB when
		// ptcd compiled it itself): in worker mode a worker compiles it,
		// and ptcd's own memory does not move.
		{name: "module-combined-bounds-compiled-in-a-worker", family: famModuleBomb, modes: worker, bound: 150 * time.Second,
			serverGrowth: 24 * MiB, serverSettle: 16 * MiB,
			req:  wasmReq(brTablesBomb(100, 10_000), timeout(5*time.Second), memory(64*MiB)),
			want: succeeds().orRefused(codes.ResourceExhausted)},
	}
}

// brTablesBomb is funcs functions (the first exported as _start), each
// with one br_table of n targets.
func brTablesBomb(funcs, n int) []byte {
	body := append([]byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}, uleb(uint64(n))...)
	body = append(body, make([]byte, n+1)...)
	body = append(body, 0x0b, 0x0b)
	bodies := make([][]byte, funcs)
	for i := range bodies {
		bodies[i] = body
	}
	return bombOf(startType, funcDecls(funcs), startExport, codeOf(bodies...))
}

// startType is a type section with the one type () -> ().
var startType = section(1, []byte{1, 0x60, 0, 0})

// bombOf assembles a module from raw sections.
func bombOf(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

// funcDecls declares n functions of type 0.
func funcDecls(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 0)
	}
	return section(3, body)
}

// startExport exports function 0 as _start.
var startExport = section(7, append(append([]byte{1}, name("_start")...), 0, 0))

// codeOf is a code section of the given bodies (locals and instructions,
// without their size).
func codeOf(bodies ...[]byte) []byte {
	out := uleb(uint64(len(bodies)))
	for _, b := range bodies {
		out = append(out, uleb(uint64(len(b)))...)
		out = append(out, b...)
	}
	return section(10, out)
}

// localsBomb is a _start that declares n i32 locals.
func localsBomb(n uint64) []byte {
	body := append(append([]byte{1}, uleb(n)...), i32, 0x0b)
	return bombOf(startType, funcDecls(1), startExport, codeOf(body))
}

// manyLocalsBomb is funcs functions of n locals each.
func manyLocalsBomb(funcs int, n uint64) []byte {
	body := append(append([]byte{1}, uleb(n)...), i32, 0x0b)
	bodies := make([][]byte, funcs)
	for i := range bodies {
		bodies[i] = body
	}
	return bombOf(startType, funcDecls(funcs), startExport, codeOf(bodies...))
}

// brTableBomb is a _start with one br_table of n targets.
func brTableBomb(n int) []byte {
	body := append([]byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}, uleb(uint64(n))...)
	body = append(body, make([]byte, n+1)...)
	body = append(body, 0x0b, 0x0b)
	return bombOf(startType, funcDecls(1), startExport, codeOf(body))
}

// nestingBomb is a _start of n nested blocks.
func nestingBomb(n int) []byte {
	body := []byte{0}
	for i := 0; i < n; i++ {
		body = append(body, 0x02, 0x40)
	}
	for i := 0; i <= n; i++ {
		body = append(body, 0x0b)
	}
	return bombOf(startType, funcDecls(1), startExport, codeOf(body))
}

// typesBomb declares n types () -> ().
func typesBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 0x60, 0, 0)
	}
	return bombOf(section(1, body), funcDecls(1), startExport, codeOf([]byte{0, 0x0b}))
}

// functionsBomb is n empty functions, the first exported as _start.
func functionsBomb(n int) []byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = []byte{0, 0x0b}
	}
	return bombOf(startType, funcDecls(n), startExport, codeOf(bodies...))
}

// globalsBomb declares n immutable i32 globals.
func globalsBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, i32, 0, 0x41, 0, 0x0b)
	}
	return bombOf(startType, funcDecls(1), section(6, body), startExport, codeOf([]byte{0, 0x0b}))
}

// importsBomb imports proc_exit n times.
func importsBomb(n int) []byte {
	types := section(1, []byte{2, 0x60, 0, 0, 0x60, 1, i32, 0})
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, name("wasi_snapshot_preview1")...)
		body = append(body, name("proc_exit")...)
		body = append(body, 0, 1)
	}
	exp := section(7, append(append(append([]byte{1}, name("_start")...), 0), uleb(uint64(n))...))
	return bombOf(types, section(2, body), funcDecls(1), exp, codeOf([]byte{0, 0x0b}))
}

// exportsBomb exports _start under n more names.
func exportsBomb(n int) []byte {
	body := uleb(uint64(n + 1))
	body = append(body, name("_start")...)
	body = append(body, 0, 0)
	for i := 0; i < n; i++ {
		body = append(body, name("f"+strconv.Itoa(i))...)
		body = append(body, 0, 0)
	}
	return bombOf(startType, funcDecls(1), section(7, body), codeOf([]byte{0, 0x0b}))
}

// dataSegmentsBomb is n empty passive data segments.
func dataSegmentsBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 1, 0)
	}
	return bombOf(startType, funcDecls(1), startExport, codeOf([]byte{0, 0x0b}), section(11, body))
}

// elementsBomb is a passive element segment of n references to _start.
func elementsBomb(n int) []byte {
	body := append([]byte{1, 1, 0}, uleb(uint64(n))...)
	body = append(body, make([]byte, n)...)
	return bombOf(startType, funcDecls(1), startExport, section(9, body), codeOf([]byte{0, 0x0b}))
}
