package wasm

import "bytes"

// modBuilder assembles small WebAssembly modules for tests, so that the
// malformed, minimal and ABI-abusing cases need no toolchain.
type modBuilder struct {
	types     [][]byte
	imports   [][]byte
	nImported uint32
	funcs     []uint32
	codes     [][]byte
	memory    []byte
	tables    [][]byte
	exports   [][]byte
	data      [][]byte
}

const (
	i32 = 0x7f
	i64 = 0x7e
)

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func wname(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items [][]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

func (b *modBuilder) typ(params, results []byte) uint32 {
	t := append(append([]byte{0x60}, append(uleb(uint64(len(params))), params...)...), append(uleb(uint64(len(results))), results...)...)
	for i, have := range b.types {
		if bytes.Equal(have, t) {
			return uint32(i)
		}
	}
	b.types = append(b.types, t)
	return uint32(len(b.types) - 1)
}

// importFunc adds a function import; call it before function.
func (b *modBuilder) importFunc(mod, name string, params, results []byte) uint32 {
	t := b.typ(params, results)
	imp := append(append(wname(mod), wname(name)...), 0x00)
	b.imports = append(b.imports, append(imp, uleb(uint64(t))...))
	b.nImported++
	return b.nImported - 1
}

// importRaw adds an import of another kind with its raw descriptor.
func (b *modBuilder) importRaw(mod, name string, desc []byte) {
	b.imports = append(b.imports, append(append(wname(mod), wname(name)...), desc...))
}

func (b *modBuilder) function(params, results []byte, body ...[]byte) uint32 {
	b.funcs = append(b.funcs, b.typ(params, results))
	code := []byte{0x00} // no locals
	for _, ins := range body {
		code = append(code, ins...)
	}
	code = append(code, 0x0b)
	b.codes = append(b.codes, append(uleb(uint64(len(code))), code...))
	return b.nImported + uint32(len(b.funcs)) - 1
}

func (b *modBuilder) export(name string, kind byte, idx uint32) {
	b.exports = append(b.exports, append(append(wname(name), kind), uleb(uint64(idx))...))
}

func (b *modBuilder) mem(minPages uint32) {
	b.memory = append([]byte{0x00}, uleb(uint64(minPages))...)
	b.export("memory", 0x02, 0)
}

// table adds a funcref table of min elements, with a maximum unless max
// is negative.
func (b *modBuilder) table(min uint32, max int64) {
	if max < 0 {
		b.tables = append(b.tables, append([]byte{0x70, 0x00}, uleb(uint64(min))...))
		return
	}
	b.tables = append(b.tables, append(append([]byte{0x70, 0x01}, uleb(uint64(min))...), uleb(uint64(max))...))
}

func (b *modBuilder) dataAt(off int32, content []byte) {
	seg := append([]byte{0x00, 0x41}, sleb(int64(off))...)
	seg = append(seg, 0x0b)
	b.data = append(b.data, append(seg, append(uleb(uint64(len(content))), content...)...))
}

func (b *modBuilder) bytes() []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	out = append(out, section(1, vec(b.types))...)
	if len(b.imports) > 0 {
		out = append(out, section(2, vec(b.imports))...)
	}
	if len(b.funcs) > 0 {
		fs := make([][]byte, len(b.funcs))
		for i, t := range b.funcs {
			fs[i] = uleb(uint64(t))
		}
		out = append(out, section(3, vec(fs))...)
	}
	if len(b.tables) > 0 {
		out = append(out, section(4, vec(b.tables))...)
	}
	if b.memory != nil {
		out = append(out, section(5, vec([][]byte{b.memory}))...)
	}
	if len(b.exports) > 0 {
		out = append(out, section(7, vec(b.exports))...)
	}
	if len(b.codes) > 0 {
		out = append(out, section(10, vec(b.codes))...)
	}
	if len(b.data) > 0 {
		out = append(out, section(11, vec(b.data))...)
	}
	return out
}

// Instructions.
func i32c(v int32) []byte    { return append([]byte{0x41}, sleb(int64(v))...) }
func call(idx uint32) []byte { return append([]byte{0x10}, uleb(uint64(idx))...) }

var (
	opDrop        = []byte{0x1a}
	opUnreachable = []byte{0x00}
	// opLoopForever is loop br 0 end.
	opLoopForever = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}
)

// writeModule returns a module whose _start writes out to stdout with
// fd_write and then runs extra.
func writeModule(out string, extra ...[]byte) []byte {
	var b modBuilder
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	b.mem(1)
	// iovec at 0: {ptr 64, len}; nwritten at 8; text at 64.
	iov := []byte{64, 0, 0, 0, byte(len(out)), byte(len(out) >> 8), 0, 0}
	b.dataAt(0, iov)
	b.dataAt(64, []byte(out))
	body := [][]byte{i32c(1), i32c(0), i32c(1), i32c(8), call(fdWrite), opDrop}
	body = append(body, extra...)
	start := b.function(nil, nil, body...)
	b.export("_start", 0x00, start)
	return b.bytes()
}
