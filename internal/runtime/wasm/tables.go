package wasm

import (
	"slices"
)

// maxTableElements bounds the elements of all of a module's tables
// together, at start and after any table.grow. wazero allocates tables
// outside the guest's linear memory (8 bytes an element), where the
// memory limit does not reach, and grows a table without a declared
// maximum as far as the guest asks: a single table.grow could take
// gigabytes of the host's memory.
const maxTableElements = 1 << 20

// boundTables returns bin with a maximum declared on every table, so that
// all tables together can never hold more than maxTableElements
// elements: a table.grow past its table's maximum returns -1 to the guest,
// as the WebAssembly specification allows for any grow. A table whose
// declared room (maximum minus minimum) fits in its share of the room the
// minimums leave keeps its maximum; the others share the rest evenly.
// bin is returned unchanged when its tables are bounded already, and when
// it cannot be parsed (the compiler then says why). The tables' minimums
// are checked against maxTableElements by checkModule.
func boundTables(bin []byte) []byte {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return bin
	}
	r := reader{b: bin, p: 8}
	for r.p < len(r.b) {
		start := r.p
		id, ok := r.byte()
		if !ok {
			return bin
		}
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)-r.p) {
			return bin
		}
		body := r.b[r.p : r.p+int(size)]
		r.p += int(size)
		if id != 4 {
			continue
		}
		sec, changed, ok := boundTableSection(body)
		if !ok || !changed {
			return bin
		}
		out := make([]byte, 0, len(bin)+len(sec)-len(body)+8)
		out = append(out, bin[:start]...)
		out = append(out, 4)
		out = appendULEB(out, uint64(len(sec)))
		out = append(out, sec...)
		return append(out, bin[r.p:]...)
	}
	return bin
}

// tableType is one table of a table section.
type tableType struct {
	ref      byte
	min, max uint64
	hasMax   bool
	newMax   uint64
}

// boundTableSection re-encodes a table section with bounded maximums; ok
// is false when the section is not one it can parse.
func boundTableSection(body []byte) (sec []byte, changed, ok bool) {
	r := reader{b: body}
	n, ok := r.count()
	if !ok {
		return nil, false, false
	}
	tables := make([]tableType, n)
	var sumMin uint64
	for i := range tables {
		ref, ok := r.byte()
		if !ok || ref == 0x40 {
			return nil, false, false
		}
		flag, ok := r.byte()
		if !ok || flag > 1 {
			return nil, false, false
		}
		t := tableType{ref: ref, hasMax: flag == 1}
		if t.min, ok = r.uleb(32); !ok {
			return nil, false, false
		}
		if t.hasMax {
			if t.max, ok = r.uleb(32); !ok || t.max < t.min {
				return nil, false, false
			}
		}
		sumMin += t.min
		tables[i] = t
	}
	if r.p != len(body) || sumMin > maxTableElements {
		return nil, false, false
	}
	// Share the spare room, smallest declared room first.
	room := func(t tableType) uint64 {
		if !t.hasMax {
			return maxTableElements
		}
		return min(t.max-t.min, maxTableElements)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := room(tables[a]), room(tables[b])
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	spare := uint64(maxTableElements) - sumMin
	for k, i := range order {
		give := min(room(tables[i]), spare/uint64(n-k))
		tables[i].newMax = tables[i].min + give
		spare -= give
		if !tables[i].hasMax || tables[i].newMax != tables[i].max {
			changed = true
		}
	}
	sec = appendULEB(nil, uint64(n))
	for _, t := range tables {
		sec = append(sec, t.ref, 1)
		sec = appendULEB(sec, t.min)
		sec = appendULEB(sec, t.newMax)
	}
	return sec, changed, true
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
