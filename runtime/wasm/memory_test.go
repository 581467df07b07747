package wasm

import (
	"bytes"
	"testing"
)

func TestAllocator(t *testing.T) {
	cases := []struct {
		name   string
		limit  uint64
		sizes  []uint64
		wantOK []bool
		peak   uint64
		hit    bool
	}{
		{"grows within the limit", 4 * pageSize, []uint64{pageSize, 2 * pageSize, 4 * pageSize}, []bool{true, true, true}, 4 * pageSize, false},
		{"refuses past the limit", 2 * pageSize, []uint64{pageSize, 3 * pageSize, 2 * pageSize}, []bool{true, false, true}, 2 * pageSize, true},
		{"zero size", pageSize, []uint64{0}, []bool{true}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &allocator{limit: tc.limit}
			m := a.Allocate(0, 1<<32)
			for i, size := range tc.sizes {
				b := m.Reallocate(size)
				if (b != nil || size == 0) != tc.wantOK[i] {
					t.Fatalf("Reallocate(%d) ok = %v, want %v", size, b != nil, tc.wantOK[i])
				}
				if b != nil && uint64(len(b)) != size {
					t.Fatalf("Reallocate(%d) returned %d bytes", size, len(b))
				}
			}
			if a.peakBytes() != tc.peak || a.limitHit() != tc.hit {
				t.Fatalf("peak %d hit %v, want %d %v", a.peakBytes(), a.limitHit(), tc.peak, tc.hit)
			}
			m.Free()
		})
	}
}

// TestRecycledMemoryIsCleared: a buffer that served one execution shows
// only zeroes to the next, at start and as it grows within capacity.
func TestRecycledMemoryIsCleared(t *testing.T) {
	var pool bufferPool
	first := (&allocator{limit: 8 * pageSize, pool: &pool}).Allocate(0, 8*pageSize)
	b := first.Reallocate(2 * pageSize)
	b = first.Reallocate(3 * pageSize) // cap now 4 pages
	for i := range b {
		b[i] = 0xAA
	}
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xBB // also dirty the spare capacity
	}
	first.Free()

	second := (&allocator{limit: 8 * pageSize, pool: &pool}).Allocate(0, 8*pageSize)
	for _, size := range []uint64{pageSize, 4 * pageSize} {
		got := second.Reallocate(size)
		if !bytes.Equal(got, make([]byte, size)) {
			t.Fatalf("memory of %d bytes is not zero", size)
		}
	}
}
