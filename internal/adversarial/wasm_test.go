package adversarial

import "encoding/binary"

// A minimal WebAssembly binary encoder: enough to hand-write the guests
// the suite needs (bombs, floods, ABI misuse) without a toolchain.

const (
	i32 = 0x7f
	i64 = 0x7e
)

// sig is a function type.
type sig struct{ params, results []byte }

// wimport is an imported function.
type wimport struct {
	module, name string
	typ          sig
}

// wfunc is a defined function.
type wfunc struct {
	typ    sig
	locals int    // i32 locals after the parameters
	body   []byte // instructions, without the final end
	export string // exported under this name when set
}

// wdata is an active data segment in memory 0.
type wdata struct {
	offset uint32
	bytes  []byte
}

// wmodule is a whole module.
type wmodule struct {
	imports   []wimport
	funcs     []wfunc
	memPages  uint32 // initial pages of memory 0 (exported as "memory")
	memMax    uint32 // maximum pages; 0: none
	noMemory  bool
	table     uint32 // initial elements of a funcref table; 0: none
	data      []wdata
	custom    int // bytes of a custom section, to make the module large
	rawImport []byte
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		b = append(b, c)
		if done {
			return b
		}
	}
}

func name(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func vec(items [][]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func section(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(payload)))...), payload...)
}

// bytes encodes the module.
func (m wmodule) bytes() []byte {
	var types []sig
	typeIndex := func(s sig) int {
		for i, t := range types {
			if string(t.params) == string(s.params) && string(t.results) == string(s.results) {
				return i
			}
		}
		types = append(types, s)
		return len(types) - 1
	}
	var imps, fns, exps, codes [][]byte
	for _, im := range m.imports {
		imps = append(imps, append(append(name(im.module), name(im.name)...), append([]byte{0x00}, uleb(uint64(typeIndex(im.typ)))...)...))
	}
	for i, f := range m.funcs {
		fns = append(fns, uleb(uint64(typeIndex(f.typ))))
		if f.export != "" {
			exps = append(exps, append(name(f.export), append([]byte{0x00}, uleb(uint64(len(m.imports)+i))...)...))
		}
		var locals []byte
		if f.locals > 0 {
			locals = append(uleb(1), append(uleb(uint64(f.locals)), i32)...)
		} else {
			locals = uleb(0)
		}
		body := append(append(locals, f.body...), 0x0b)
		codes = append(codes, append(uleb(uint64(len(body))), body...))
	}
	var tys [][]byte
	for _, t := range types {
		tys = append(tys, append(append([]byte{0x60}, vec(bytesOf(t.params))...), vec(bytesOf(t.results))...))
	}
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(tys))...)
	if len(imps) > 0 || m.rawImport != nil {
		if m.rawImport != nil {
			imps = append(imps, m.rawImport)
		}
		out = append(out, section(2, vec(imps))...)
	}
	out = append(out, section(3, vec(fns))...)
	if m.table > 0 {
		out = append(out, section(4, vec([][]byte{append([]byte{0x70, 0x00}, uleb(uint64(m.table))...)}))...)
	}
	if !m.noMemory {
		lim := append([]byte{0x00}, uleb(uint64(m.memPages))...)
		if m.memMax > 0 {
			lim = append(append([]byte{0x01}, uleb(uint64(m.memPages))...), uleb(uint64(m.memMax))...)
		}
		out = append(out, section(5, vec([][]byte{lim}))...)
		exps = append(exps, append(name("memory"), 0x02, 0x00))
	}
	out = append(out, section(7, vec(exps))...)
	out = append(out, section(10, vec(codes))...)
	if len(m.data) > 0 {
		var ds [][]byte
		for _, d := range m.data {
			seg := append([]byte{0x00}, append(i32c(int32(d.offset)), 0x0b)...)
			ds = append(ds, append(seg, append(uleb(uint64(len(d.bytes))), d.bytes...)...))
		}
		out = append(out, section(11, vec(ds))...)
	}
	if m.custom > 0 {
		out = append(out, section(0, append(name("padding"), make([]byte, m.custom)...))...)
	}
	return out
}

func bytesOf(b []byte) [][]byte {
	var out [][]byte
	for _, c := range b {
		out = append(out, []byte{c})
	}
	return out
}

// Instructions.

func i32c(v int32) []byte     { return append([]byte{0x41}, sleb(int64(v))...) }
func call(f int) []byte       { return append([]byte{0x10}, uleb(uint64(f))...) }
func lget(i int) []byte       { return append([]byte{0x20}, uleb(uint64(i))...) }
func lset(i int) []byte       { return append([]byte{0x21}, uleb(uint64(i))...) }
func br(depth int) []byte     { return append([]byte{0x0c}, uleb(uint64(depth))...) }
func brIf(depth int) []byte   { return append([]byte{0x0d}, uleb(uint64(depth))...) }
func load(offset int) []byte  { return append([]byte{0x28, 0x02}, uleb(uint64(offset))...) }
func store(offset int) []byte { return append([]byte{0x36, 0x02}, uleb(uint64(offset))...) }

var (
	opBlock       = []byte{0x02, 0x40}
	opLoop        = []byte{0x03, 0x40}
	opIf          = []byte{0x04, 0x40}
	opElse        = []byte{0x05}
	opRefNullFunc = []byte{0xd0, 0x70}
	opTableGrow0  = []byte{0xfc, 0x0f, 0x00}
	opEnd         = []byte{0x0b}
	opDrop        = []byte{0x1a}
	opUnreachable = []byte{0x00}
	opEq          = []byte{0x46}
	opNe          = []byte{0x47}
	opEqz         = []byte{0x45}
	opAdd         = []byte{0x6a}
	opSub         = []byte{0x6b}
	opLtU         = []byte{0x49}
	opMemGrow     = []byte{0x40, 0x00}
)

func code(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Imports every guest may use, at fixed function indices.
var stdImports = []wimport{
	{"wasi_snapshot_preview1", "fd_write", sig{[]byte{i32, i32, i32, i32}, []byte{i32}}},
	{"wasi_snapshot_preview1", "proc_exit", sig{[]byte{i32}, nil}},
	{"ptc_v1", "call", sig{[]byte{i32, i32, i32, i32, i32}, []byte{i32}}},
	{"ptc_v1", "read", sig{[]byte{i32, i32, i32}, []byte{i32}}},
	{"ptc_v1", "drop", sig{[]byte{i32}, nil}},
}

const (
	fnFdWrite = iota
	fnProcExit
	fnCall
	fnRead
	fnDrop
	fnStart // the first defined function: _start
)

// Memory layout of the guests below.
const (
	memIOV     = 0    // an iovec {ptr, len}
	memNW      = 8    // fd_write's nwritten
	memOut     = 16   // call's out record {handle, length}
	memName    = 64   // a tool name
	memArgs    = 256  // tool arguments
	memText    = 1024 // text to write
	memBuf     = 4096 // buffers
	memIOVList = 8192 // a list of iovecs for floods
)

// guest builds a module of the standard imports and a _start with body.
func guest(locals int, data []wdata, body ...[]byte) wmodule {
	return wmodule{
		imports:  stdImports,
		funcs:    []wfunc{{typ: sig{}, locals: locals, body: code(body...), export: "_start"}},
		memPages: 4,
		data:     data,
	}
}

// write emits fd_write(fd, iov) of the len bytes at ptr.
func write(fd int32, ptr, n int32) []byte {
	return code(
		i32c(memIOV), i32c(ptr), store(0),
		i32c(memIOV), i32c(n), store(4),
		i32c(fd), i32c(memIOV), i32c(1), i32c(memNW), call(fnFdWrite), opDrop,
	)
}

// wasmPrint writes text to stdout (the result) and returns.
func wasmPrint(text string) []byte {
	return guest(0, []wdata{{memText, []byte(text)}}, write(1, memText, int32(len(text)))).bytes()
}

// wasmSpin computes forever.
func wasmSpin() []byte {
	return guest(0, nil, opLoop, br(0), opEnd).bytes()
}

// wasmGrow grows memory by pages until refused, then traps (fail) or
// prints 1.
func wasmGrow(pages int32, fail bool) []byte {
	after := write(1, memText, 1)
	if fail {
		after = opUnreachable
	}
	return guest(0, []wdata{{memText, []byte("1")}},
		opBlock, opLoop,
		i32c(pages), opMemGrow, i32c(-1), opEq, brIf(1),
		br(0), opEnd, opEnd,
		after,
	).bytes()
}

// wasmTableGrow grows a funcref table of one element (declared without a
// maximum) by delta elements — once, or in a loop until refused — and
// prints "-1" when a grow was refused, "0" otherwise.
func wasmTableGrow(delta int32, loop bool) []byte {
	grow := code(opRefNullFunc, i32c(delta), opTableGrow0, i32c(-1), opEq)
	var body []byte
	if loop {
		body = code(opBlock, opLoop, grow, brIf(1), br(0), opEnd, opEnd, write(1, memText, 2))
	} else {
		body = code(grow, opIf, write(1, memText, 2), opElse, write(1, memText+2, 1), opEnd)
	}
	m := guest(0, []wdata{{memText, []byte("-10")}}, body)
	m.table = 1
	return m.bytes()
}

// wasmFlood writes rounds × iovs × 64 KiB of fill to fd.
func wasmFlood(fd int32, fill byte, iovs, rounds int32) []byte {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = fill
	}
	list := make([]byte, 8*iovs)
	for i := int32(0); i < iovs; i++ {
		binary.LittleEndian.PutUint32(list[8*i:], 65536)
		binary.LittleEndian.PutUint32(list[8*i+4:], chunk)
	}
	m := guest(1, []wdata{{65536, buf}, {memIOVList, list}},
		opBlock, opLoop,
		lget(0), i32c(rounds), opEq, brIf(1),
		i32c(fd), i32c(memIOVList), i32c(iovs), i32c(memNW), call(fnFdWrite), opDrop,
		lget(0), i32c(1), opAdd, lset(0),
		br(0), opEnd, opEnd,
	)
	return m.bytes()
}

// wasmEndlessStdout writes digits to stdout until stopped.
func wasmEndlessStdout() []byte {
	return wasmFlood(1, '1', 16, 1<<30)
}

// wasmCall calls tool with args at fixed places and then runs then.
func wasmCall(tool, args string, locals int, then ...[]byte) wmodule {
	return guest(locals, []wdata{{memName, []byte(tool)}, {memArgs, []byte(args)}},
		code(i32c(memName), i32c(int32(len(tool))), i32c(memArgs), i32c(int32(len(args))), i32c(memOut), call(fnCall)),
		code(then...),
	)
}

// wasmCallAndPrint calls a tool and writes its payload (result or error
// object) to stdout.
func wasmCallAndPrint(tool, args string) []byte {
	return wasmCall(tool, args, 0,
		opDrop,
		// read(handle, memBuf, length)
		i32c(memOut), load(0), i32c(memBuf), i32c(memOut), load(4), call(fnRead), opDrop,
		// fd_write(1, {memBuf, length})
		i32c(memIOV), i32c(memBuf), store(0),
		i32c(memIOV), i32c(memOut), load(4), store(4),
		i32c(1), i32c(memIOV), i32c(1), i32c(memNW), call(fnFdWrite), opDrop,
	).bytes()
}

// wasmCallFlood calls a tool until a call fails, dropping each payload,
// then traps.
func wasmCallFlood(keepHandles bool) []byte {
	tool, args := "get_budget_by_level", `{"level":"junior"}`
	dropIt := code(i32c(memOut), load(0), call(fnDrop))
	if keepHandles {
		dropIt = nil
	}
	return guest(0, []wdata{{memName, []byte(tool)}, {memArgs, []byte(args)}},
		opLoop,
		i32c(memName), i32c(int32(len(tool))), i32c(memArgs), i32c(int32(len(args))), i32c(memOut), call(fnCall),
		opIf, opUnreachable, opEnd,
		dropIt,
		br(0), opEnd,
	).bytes()
}

// wasmRecurse recurses without end.
func wasmRecurse() []byte {
	m := guest(0, nil, call(fnStart+1))
	m.funcs = append(m.funcs, wfunc{typ: sig{}, body: code(call(fnStart + 1))})
	return m.bytes()
}

// wasmExit calls proc_exit(n).
func wasmExit(n int32) []byte { return guest(0, nil, i32c(n), call(fnProcExit)).bytes() }
