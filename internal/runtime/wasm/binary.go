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

// checkStructure reads every section of a module and refuses it when it
// declares more than b allows (see Bounds). It runs before wazero sees the
// module: it is linear in len(bin), allocates nothing in proportion to the
// counts the module declares, and stops at the first bound crossed. A
// module it cannot parse is refused too (wazero would refuse it as well,
// and unknown instructions cannot be bounded).
func checkStructure(bin []byte, b Bounds) error {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return fmt.Errorf("%w: the bytes do not start with the WebAssembly magic \\0asm; send a binary .wasm module", ErrInvalidModule)
	}
	c := structure{b: b}
	r := reader{b: bin, p: 8}
	for r.p < len(r.b) {
		id, ok := r.byte()
		if !ok {
			return errBadBinary
		}
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)-r.p) {
			return fmt.Errorf("%w: section %d runs past the end of the module", ErrInvalidModule, id)
		}
		sec := reader{b: r.b[r.p : r.p+int(size)]}
		r.p += int(size)
		if err := c.section(id, &sec); err != nil {
			if errors.Is(err, errBadBinary) && !errors.Is(err, ErrInvalidModule) {
				return fmt.Errorf("%w: section %d is malformed", ErrInvalidModule, id)
			}
			return err
		}
	}
	return nil
}

// structure counts what a module declares, section by section.
type structure struct {
	b                           Bounds
	funcs, locals, brTargets    uint64
	dataBytes, elements, bodies uint64
}

func (c *structure) section(id byte, r *reader) error {
	b := c.b
	switch id {
	case 0:
		return c.custom(r)
	case 1: // types
		return r.each(b.MaxTypes, "types", "MaxTypes", func() error { return r.funcType(b.MaxParams) })
	case 2: // imports
		return r.each(b.MaxImports, "imports", "MaxImports", func() error {
			if _, ok := r.name(); !ok {
				return errBadBinary
			}
			if _, ok := r.name(); !ok {
				return errBadBinary
			}
			kind, ok := r.byte()
			if !ok {
				return errBadBinary
			}
			switch kind {
			case 0x00: // function
				c.funcs++
				if c.funcs > uint64(b.MaxFunctions) {
					return over("its functions number", c.funcs, b.MaxFunctions, "MaxFunctions")
				}
				return r.skipU32()
			case 0x01: // table
				if err := r.valType(); err != nil {
					return err
				}
				_, ok := r.limits()
				return okOrBad(ok)
			case 0x02:
				_, ok := r.limits()
				return okOrBad(ok)
			case 0x03:
				return r.globalType()
			case 0x04: // tag
				if _, ok := r.byte(); !ok {
					return errBadBinary
				}
				return r.skipU32()
			}
			return fmt.Errorf("%w: an import has unknown kind %#x", ErrInvalidModule, kind)
		})
	case 3: // functions
		n, ok := r.count()
		if !ok {
			return errBadBinary
		}
		if c.funcs += uint64(n); c.funcs > uint64(b.MaxFunctions) {
			return over("its functions number", c.funcs, b.MaxFunctions, "MaxFunctions")
		}
		for i := 0; i < n; i++ {
			if err := r.skipU32(); err != nil {
				return err
			}
		}
	case 4, 5: // tables, memories: read again by scanModule and boundTables
	case 6: // globals
		return r.each(b.MaxGlobals, "globals", "MaxGlobals", func() error {
			if err := r.globalType(); err != nil {
				return err
			}
			return c.constExpr(r)
		})
	case 7: // exports
		return r.each(b.MaxExports, "exports", "MaxExports", func() error {
			if _, ok := r.name(); !ok {
				return errBadBinary
			}
			if _, ok := r.byte(); !ok {
				return errBadBinary
			}
			return r.skipU32()
		})
	case 8, 12: // start, data count
		return r.skipU32()
	case 9:
		return r.each(b.MaxElementSegments, "element segments", "MaxElementSegments", func() error { return c.elementSegment(r) })
	case 10:
		return r.each(b.MaxFunctions, "function bodies", "MaxFunctions", func() error { return c.body(r) })
	case 11:
		return r.each(b.MaxDataSegments, "data segments", "MaxDataSegments", func() error { return c.dataSegment(r) })
	default:
		return fmt.Errorf("%w: it has a section with id %d, which this engine does not support", ErrInvalidModule, id)
	}
	return nil
}

func okOrBad(ok bool) error {
	if !ok {
		return errBadBinary
	}
	return nil
}

// each reads a vector of at most max elements with read.
func (r *reader) each(max int, what, knob string, read func() error) error {
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	if n > max {
		return over("its "+what+" number", uint64(n), max, knob)
	}
	for i := 0; i < n; i++ {
		if err := read(); err != nil {
			return err
		}
	}
	return nil
}

func (r *reader) skipU32() error {
	_, ok := r.u32()
	return okOrBad(ok)
}

// valType reads a value type: one byte, or a typed reference with its
// heap type.
func (r *reader) valType() error {
	t, ok := r.byte()
	if !ok {
		return errBadBinary
	}
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69:
		return nil
	case 0x63, 0x64: // (ref null ht), (ref ht)
		_, ok := r.sleb(33)
		return okOrBad(ok)
	}
	return fmt.Errorf("%w: unknown value type %#x", ErrInvalidModule, t)
}

func (r *reader) globalType() error {
	if err := r.valType(); err != nil {
		return err
	}
	_, ok := r.byte()
	return okOrBad(ok)
}

// funcType reads a function type of at most max parameters and max
// results.
func (r *reader) funcType(max int) error {
	form, ok := r.byte()
	if !ok {
		return errBadBinary
	}
	if form != 0x60 {
		return fmt.Errorf("%w: a type has form %#x; only function types (0x60) are supported", ErrInvalidModule, form)
	}
	for _, what := range [...]string{"parameters", "results"} {
		if err := r.each(max, "function type's "+what, "MaxParams", r.valType); err != nil {
			return err
		}
	}
	return nil
}

// sleb reads a signed LEB128 number of at most bits bits.
func (r *reader) sleb(bits uint) (int64, bool) {
	var v int64
	for shift := uint(0); shift < bits+7; shift += 7 {
		c, ok := r.byte()
		if !ok {
			return 0, false
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, true
		}
	}
	return 0, false
}

// body reads one function body: its local declarations and its code.
func (c *structure) body(r *reader) error {
	b := c.b
	size, ok := r.u32()
	if !ok || uint64(size) > uint64(len(r.b)-r.p) {
		return errBadBinary
	}
	c.bodies++
	if int(size) > b.MaxFunctionBytes {
		return over(fmt.Sprintf("function body %d has bytes", c.bodies-1), uint64(size), b.MaxFunctionBytes, "MaxFunctionBytes")
	}
	fr := reader{b: r.b[r.p : r.p+int(size)]}
	r.p += int(size)
	groups, ok := fr.count()
	if !ok {
		return errBadBinary
	}
	var locals uint64
	for i := 0; i < groups; i++ {
		n, ok := fr.u32()
		if !ok {
			return errBadBinary
		}
		if locals += uint64(n); locals > uint64(b.MaxFunctionLocals) {
			return over(fmt.Sprintf("function body %d declares locals", c.bodies-1), locals, b.MaxFunctionLocals, "MaxFunctionLocals")
		}
		if err := fr.valType(); err != nil {
			return err
		}
	}
	if c.locals += locals; c.locals > uint64(b.MaxLocals) {
		return over("its functions declare locals", c.locals, b.MaxLocals, "MaxLocals")
	}
	if err := c.code(&fr, false); err != nil {
		return err
	}
	if fr.p != len(fr.b) {
		return fmt.Errorf("%w: function body %d has bytes after its end", ErrInvalidModule, c.bodies-1)
	}
	return nil
}

// constExpr reads a constant expression (a global's initialiser, a
// segment's offset or element).
func (c *structure) constExpr(r *reader) error { return c.code(r, true) }

func (c *structure) elementSegment(r *reader) error {
	flags, ok := r.u32()
	if !ok || flags > 7 {
		return errBadBinary
	}
	if flags&0x02 != 0 && flags&0x01 == 0 { // explicit table index
		if err := r.skipU32(); err != nil {
			return err
		}
	}
	if flags&0x01 == 0 { // active: offset
		if err := c.constExpr(r); err != nil {
			return err
		}
	}
	if flags&0x03 != 0 { // elemkind or reftype
		if flags&0x04 != 0 {
			if err := r.valType(); err != nil {
				return err
			}
		} else if _, ok := r.byte(); !ok {
			return errBadBinary
		}
	}
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	if c.elements += uint64(n); c.elements > uint64(c.b.MaxElements) {
		return over("its element segments hold elements", c.elements, c.b.MaxElements, "MaxElements")
	}
	for i := 0; i < n; i++ {
		var err error
		if flags&0x04 != 0 {
			err = c.constExpr(r)
		} else {
			err = r.skipU32()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *structure) dataSegment(r *reader) error {
	flags, ok := r.u32()
	if !ok || flags > 2 {
		return errBadBinary
	}
	if flags == 2 {
		if err := r.skipU32(); err != nil {
			return err
		}
	}
	if flags != 1 {
		if err := c.constExpr(r); err != nil {
			return err
		}
	}
	n, ok := r.count()
	if !ok {
		return errBadBinary
	}
	if c.dataBytes += uint64(n); c.dataBytes > uint64(c.b.MaxDataBytes) {
		return over("its data segments hold bytes", c.dataBytes, c.b.MaxDataBytes, "MaxDataBytes")
	}
	r.p += n
	return nil
}

// custom bounds the "name" section, which wazero decodes (other custom
// sections it skips or keeps as bytes).
func (c *structure) custom(r *reader) error {
	name, ok := r.name()
	if !ok {
		return errBadBinary
	}
	if name != "name" {
		return nil
	}
	var names uint64
	for r.p < len(r.b) {
		id, ok1 := r.byte()
		size, ok2 := r.u32()
		if !ok1 || !ok2 || uint64(size) > uint64(len(r.b)-r.p) {
			return nil // wazero ignores a malformed name section
		}
		sub := reader{b: r.b[r.p : r.p+int(size)]}
		r.p += int(size)
		n, ok := sub.count()
		if !ok {
			continue
		}
		names += uint64(n)
		if id == 2 { // local names: a map per function
			for i := 0; i < n; i++ {
				_, ok1 := sub.u32()
				m, ok2 := sub.count()
				if !ok1 || !ok2 {
					break
				}
				names += uint64(m)
				for j := 0; j < m; j++ {
					_, ok1 := sub.u32()
					_, ok2 := sub.name()
					if !ok1 || !ok2 {
						break
					}
				}
			}
		}
		if names > uint64(c.b.MaxNames) {
			return over("its name section holds names", names, c.b.MaxNames, "MaxNames")
		}
	}
	return nil
}
