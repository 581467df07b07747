package wasm

import "strconv"

// Module structure bombs: small modules whose sections declare far more
// than toolchains emit, each aimed at one of the Bounds.

// bombModule assembles a module from raw sections: one type () -> (), the
// given sections, and whatever functions the code section defines use
// type 0.
func bombModule(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

// emptyType is a type section with the one type () -> ().
var emptyType = section(1, []byte{1, 0x60, 0, 0})

// oneFunc declares n functions of type 0 (and their code must follow).
func funcDecls(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 0)
	}
	return section(3, body)
}

// codeOf is a code section with one body per element of bodies (each
// the locals declarations and instructions, without the size).
func codeOf(bodies ...[]byte) []byte {
	out := uleb(uint64(len(bodies)))
	for _, b := range bodies {
		out = append(out, uleb(uint64(len(b)))...)
		out = append(out, b...)
	}
	return section(10, out)
}

// localsBomb is one function that declares n i32 locals in one group: 56
// bytes with n = 1<<32-1.
func localsBomb(n uint64) []byte {
	body := append([]byte{1}, uleb(n)...)
	body = append(body, i32, 0x0b)
	return bombModule(emptyType, funcDecls(1), codeOf(body))
}

// manyLocalsBomb is funcs functions that declare n locals each.
func manyLocalsBomb(funcs int, n uint64) []byte {
	body := append([]byte{1}, uleb(n)...)
	body = append(body, i32, 0x0b)
	bodies := make([][]byte, funcs)
	for i := range bodies {
		bodies[i] = body
	}
	return bombModule(emptyType, funcDecls(funcs), codeOf(bodies...))
}

// brTableBomb is a function with one br_table of n targets.
func brTableBomb(n int) []byte {
	body := []byte{0, 0x02, 0x40, 0x41, 0x00, 0x0e}
	body = append(body, uleb(uint64(n))...)
	for i := 0; i <= n; i++ {
		body = append(body, 0)
	}
	body = append(body, 0x0b, 0x0b)
	return bombModule(emptyType, funcDecls(1), codeOf(body))
}

// brTablesBomb is a function with tables br_tables of n targets each.
func brTablesBomb(tables, n int) []byte {
	body := []byte{0, 0x02, 0x40}
	for t := 0; t < tables; t++ {
		body = append(body, 0x41, 0x00, 0x0e)
		body = append(body, uleb(uint64(n))...)
		for i := 0; i <= n; i++ {
			body = append(body, 0)
		}
	}
	body = append(body, 0x0b, 0x0b)
	return bombModule(emptyType, funcDecls(1), codeOf(body))
}

// nestingBomb is a function of n nested blocks.
func nestingBomb(n int) []byte {
	body := []byte{0}
	for i := 0; i < n; i++ {
		body = append(body, 0x02, 0x40)
	}
	for i := 0; i <= n; i++ {
		body = append(body, 0x0b)
	}
	return bombModule(emptyType, funcDecls(1), codeOf(body))
}

// typesBomb is a type section of n types () -> ().
func typesBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 0x60, 0, 0)
	}
	return bombModule(section(1, body))
}

// functionsBomb is n empty functions.
func functionsBomb(n int) []byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = []byte{0, 0x0b}
	}
	return bombModule(emptyType, funcDecls(n), codeOf(bodies...))
}

// globalsBomb is n immutable i32 globals.
func globalsBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, i32, 0, 0x41, 0, 0x0b)
	}
	return bombModule(section(6, body))
}

// importsBomb is n imports of a WASI function.
func importsBomb(n int) []byte {
	types := section(1, []byte{1, 0x60, 1, i32, 0})
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, wname("wasi_snapshot_preview1")...)
		body = append(body, wname("proc_exit")...)
		body = append(body, 0, 0)
	}
	return bombModule(types, section(2, body))
}

// exportsBomb is one function exported under n names.
func exportsBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, wname(strconv.Itoa(i))...)
		body = append(body, 0, 0)
	}
	return bombModule(emptyType, funcDecls(1), section(7, body), codeOf([]byte{0, 0x0b}))
}

// dataBomb is n empty passive data segments.
func dataBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 1, 0)
	}
	return bombModule(section(11, body))
}

// dataBytesBomb is one passive data segment of n bytes.
func dataBytesBomb(n int) []byte {
	body := append([]byte{1, 1}, uleb(uint64(n))...)
	body = append(body, make([]byte, n)...)
	return bombModule(section(11, body))
}

// elementsBomb is one passive element segment of n references to
// function 0.
func elementsBomb(n int) []byte {
	body := append([]byte{1, 1, 0}, uleb(uint64(n))...)
	body = append(body, make([]byte, n)...)
	return bombModule(emptyType, funcDecls(1), section(9, body), codeOf([]byte{0, 0x0b}))
}

// elementSegmentsBomb is n empty passive element segments.
func elementSegmentsBomb(n int) []byte {
	body := uleb(uint64(n))
	for i := 0; i < n; i++ {
		body = append(body, 1, 0, 0)
	}
	return bombModule(section(9, body))
}

// paramsBomb is a type of n parameters.
func paramsBomb(n int) []byte {
	body := []byte{1, 0x60}
	body = append(body, uleb(uint64(n))...)
	for i := 0; i < n; i++ {
		body = append(body, i32)
	}
	body = append(body, 0)
	return bombModule(section(1, body))
}

// bodyBytesBomb is a function whose body is n bytes (nops).
func bodyBytesBomb(n int) []byte {
	body := make([]byte, n)
	for i := range body {
		body[i] = 0x01
	}
	body[0], body[n-1] = 0, 0x0b
	return bombModule(emptyType, funcDecls(1), codeOf(body))
}

// namesBomb is a name section with n function names.
func namesBomb(n int) []byte {
	names := uleb(uint64(n))
	for i := 0; i < n; i++ {
		names = append(names, uleb(uint64(i))...)
		names = append(names, wname("f")...)
	}
	body := append(wname("name"), 1)
	body = append(body, uleb(uint64(len(names)))...)
	body = append(body, names...)
	return bombModule(section(0, body))
}
