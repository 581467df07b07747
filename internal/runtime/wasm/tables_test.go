package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// tableGrowModule returns a module with the given tables (min, max; a
// negative max is none) whose _start grows table idx by delta elements
// and traps when the grow is refused.
func tableGrowModule(tables [][2]int64, idx uint32, delta int32) []byte {
	var b modBuilder
	for _, t := range tables {
		b.table(uint32(t[0]), t[1])
	}
	b.mem(1)
	grow := append(append([]byte{0xd0, 0x70}, i32c(delta)...), append([]byte{0xfc, 0x0f}, uleb(uint64(idx))...)...)
	start := b.function(nil, nil,
		grow, i32c(-1), []byte{0x46}, // i32.eq
		[]byte{0x04, 0x40}, opUnreachable, []byte{0x0b}) // if unreachable end
	b.export("_start", 0x00, start)
	return b.bytes()
}

// TestTableGrowBounded: a table.grow that would take a module's tables
// past maxTableElements elements together is refused (the guest sees -1),
// whatever the tables declare; the memory limit does not reach tables.
func TestTableGrowBounded(t *testing.T) {
	const most = maxTableElements
	none := int64(-1)
	cases := []struct {
		name   string
		tables [][2]int64
		idx    uint32
		delta  int32
		ok     bool
	}{
		{"no maximum, huge grow", [][2]int64{{1, none}}, 0, 100_000_000, false},
		{"no maximum, grow to the bound", [][2]int64{{1, none}}, 0, most - 1, true},
		{"no maximum, grow past the bound", [][2]int64{{1, none}}, 0, most, false},
		{"maximum above the bound", [][2]int64{{0, 1 << 30}}, 0, most + 1, false},
		{"maximum above the bound, grow to it", [][2]int64{{0, 1 << 30}}, 0, most, true},
		{"declared maximum kept", [][2]int64{{0, 10}}, 0, 10, true},
		{"declared maximum enforced", [][2]int64{{0, 10}}, 0, 11, false},
		{"two tables share the room", [][2]int64{{0, none}, {0, none}}, 1, most / 2, true},
		{"two tables, one past its share", [][2]int64{{0, none}, {0, none}}, 1, most/2 + 1, false},
		{"a small table leaves the rest", [][2]int64{{0, 16}, {0, none}}, 1, most - 16, true},
		{"a small table leaves no more", [][2]int64{{0, 16}, {0, none}}, 1, most - 15, false},
	}
	e := newEngine(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, _ := job(tableGrowModule(c.tables, c.idx, c.delta), "", limits.Limits{MemoryBytes: 16 << 20}, nil)
			out := e.Run(context.Background(), j)
			if c.ok {
				if out.Err != nil {
					t.Fatalf("refused: %v", out.Err)
				}
				return
			}
			if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, "unreachable") {
				t.Fatalf("grow of %d not refused: %v", c.delta, out.Err)
			}
		})
	}
}

// TestTableMinimumOverBound: tables that start with more elements than
// the bound are refused at compile time.
func TestTableMinimumOverBound(t *testing.T) {
	e := newEngine(t)
	for _, tables := range [][][2]int64{{{maxTableElements + 1, -1}}, {{maxTableElements, -1}, {1, 1}}} {
		_, err := e.Compile(context.Background(), tableGrowModule(tables, 0, 1))
		if err == nil || !strings.Contains(err.Error(), "tables start with") {
			t.Errorf("%v: %v", tables, err)
		}
	}
}

// FuzzBoundTables: boundTables never panics, and what it returns from a
// module wazero accepts is accepted too, with tables bounded.
func FuzzBoundTables(f *testing.F) {
	f.Add(tableGrowModule([][2]int64{{1, -1}}, 0, 1))
	f.Add(tableGrowModule([][2]int64{{0, 1 << 30}, {3, 5}}, 1, 1))
	f.Fuzz(func(t *testing.T, bin []byte) {
		out := boundTables(bin)
		shape, err := scanModule(out)
		if err == nil && shape.tableMinElems > maxTableElements && len(out) != len(bin) {
			t.Fatalf("tables of %d elements rewritten", shape.tableMinElems)
		}
	})
}
