package wasm

import (
	"errors"
	"fmt"
)

// moduleShape is what the engine needs to know about a module beyond what
// wazero's CompiledModule reports: every import (wazero lists only function
// and memory imports), the initial size of its memory and of its tables.
type moduleShape struct {
	imports       []importEntry
	memoryMinPage uint64
	tableMinElems uint64
	hasMemory     bool
}

// importEntry is one import of a module.
type importEntry struct {
	module, name string
	kind         byte // 0 func, 1 table, 2 memory, 3 global, 4 tag
}

var importKindNames = [...]string{"function", "table", "memory", "global", "tag"}

func (i importEntry) kindName() string {
	if int(i.kind) < len(importKindNames) {
		return importKindNames[i.kind]
	}
	return "unknown"
}

var errBadBinary = errors.New("malformed module binary")

// scanModule reads the import, table and memory sections of a WebAssembly
// binary. It never panics and reads nothing outside bin; the binary is
// untrusted, though the engine calls it only after wazero has validated it.
func scanModule(bin []byte) (moduleShape, error) {
	var shape moduleShape
	r := reader{b: bin}
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return shape, errBadBinary
	}
	r.p = 8
	for r.p < len(r.b) {
		id, ok := r.byte()
		if !ok {
			return shape, errBadBinary
		}
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)-r.p) {
			return shape, errBadBinary
		}
		sec := reader{b: r.b[r.p : r.p+int(size)]}
		r.p += int(size)
		var err error
		switch id {
		case 2:
			err = sec.imports(&shape)
		case 4:
			err = sec.tables(&shape)
		case 5:
			err = sec.memories(&shape)
		}
		if err != nil {
			return shape, err
		}
	}
	return shape, nil
}

type reader struct {
	b []byte
	p int
}

func (r *reader) byte() (byte, bool) {
	if r.p >= len(r.b) {
		return 0, false
	}
	c := r.b[r.p]
	r.p++
	return c, true
}

// uleb reads an unsigned LEB128 number of at most bits bits.
func (r *reader) uleb(bits uint) (uint64, bool) {
	var v uint64
	for shift := uint(0); shift < bits; shift += 7 {
		c, ok := r.byte()
		if !ok {
			return 0, false
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				return 0, false
			}
			return v, true
		}
	}
	return 0, false
}

func (r *reader) u32() (uint32, bool) {
	v, ok := r.uleb(32)
	return uint32(v), ok
}

func (r *reader) name() (string, bool) {
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(len(r.b)-r.p) {
		return "", false
	}
	s := string(r.b[r.p : r.p+int(n)])
	r.p += int(n)
	return s, true
}

// limits reads a limits record and returns its minimum.
func (r *reader) limits() (uint64, bool) {
	flag, ok := r.byte()
	if !ok || flag > 0x07 {
		return 0, false
	}
	bits := uint(32)
	if flag&0x04 != 0 {
		bits = 64
	}
	min, ok := r.uleb(bits)
	if !ok {
		return 0, false
	}
	if flag&0x01 != 0 {
		if _, ok := r.uleb(bits); !ok {
			return 0, false
		}
	}
	return min, true
}

// count reads a vector length, refusing counts that cannot fit in the
// remaining bytes (each element takes at least one byte).
func (r *reader) count() (int, bool) {
	n, ok := r.u32()
	if !ok || uint64(n) > uint64(len(r.b)-r.p) {
		return 0, false
	}
	return int(n), true
}

func (r *reader) imports(shape *moduleShape) error {
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	for i := 0; i < n; i++ {
		mod, ok1 := r.name()
		name, ok2 := r.name()
		kind, ok3 := r.byte()
		if !ok1 || !ok2 || !ok3 {
			return errBadBinary
		}
		switch kind {
		case 0x00, 0x04: // function type index; tag attribute + type index
			if kind == 0x04 {
				if _, ok := r.byte(); !ok {
					return errBadBinary
				}
			}
			if _, ok := r.u32(); !ok {
				return errBadBinary
			}
		case 0x01: // table: reftype, limits
			if _, ok := r.byte(); !ok {
				return errBadBinary
			}
			if _, ok := r.limits(); !ok {
				return errBadBinary
			}
		case 0x02:
			if _, ok := r.limits(); !ok {
				return errBadBinary
			}
		case 0x03: // global: valtype, mutability
			if _, ok := r.byte(); !ok {
				return errBadBinary
			}
			if _, ok := r.byte(); !ok {
				return errBadBinary
			}
		default:
			return fmt.Errorf("%w: import %q.%q has unknown kind %#x", errBadBinary, mod, name, kind)
		}
		shape.imports = append(shape.imports, importEntry{module: mod, name: name, kind: kind})
	}
	return nil
}

func (r *reader) tables(shape *moduleShape) error {
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	for i := 0; i < n; i++ {
		first, ok := r.byte()
		if !ok {
			return errBadBinary
		}
		if first == 0x40 { // table with an initialiser expression: 0x40 0x00 tabletype expr
			return fmt.Errorf("%w: table initialiser expressions are not supported", errBadBinary)
		}
		min, ok := r.limits()
		if !ok {
			return errBadBinary
		}
		shape.tableMinElems += min
	}
	return nil
}

func (r *reader) memories(shape *moduleShape) error {
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	for i := 0; i < n; i++ {
		min, ok := r.limits()
		if !ok {
			return errBadBinary
		}
		shape.hasMemory = true
		if min > shape.memoryMinPage {
			shape.memoryMinPage = min
		}
	}
	return nil
}
