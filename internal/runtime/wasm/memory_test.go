package wasm

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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
			defer a.release()
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
		})
	}
}

// TestAllocatorSetLimit: a memory allocated before its job learns the
// job's limit later (Started.Run); a limit below what it holds is refused
// and changes nothing, a limit it fits bounds its later growth.
func TestAllocatorSetLimit(t *testing.T) {
	cases := []struct {
		name   string
		held   uint64
		limit  uint64
		ok     bool
		grow   uint64
		growOK bool
	}{
		{"lowered, growth within it", 2 * pageSize, 4 * pageSize, true, 4 * pageSize, true},
		{"lowered, growth past it", 2 * pageSize, 3 * pageSize, true, 4 * pageSize, false},
		{"exactly what it holds", 2 * pageSize, 2 * pageSize, true, 3 * pageSize, false},
		{"below what it holds", 3 * pageSize, 2 * pageSize, false, 8 * pageSize, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &allocator{limit: 16 * pageSize}
			defer a.release()
			m := a.Allocate(0, 1<<32)
			if m.Reallocate(tc.held) == nil {
				t.Fatal("Reallocate failed")
			}
			if a.size() != tc.held {
				t.Fatalf("size %d, want %d", a.size(), tc.held)
			}
			if ok := a.setLimit(tc.limit); ok != tc.ok {
				t.Fatalf("setLimit(%d) = %v, want %v", tc.limit, ok, tc.ok)
			}
			if ok := m.Reallocate(tc.grow) != nil; ok != tc.growOK {
				t.Fatalf("Reallocate(%d) ok = %v, want %v", tc.grow, ok, tc.growOK)
			}
			if a.limitHit() != !tc.growOK {
				t.Fatalf("limit hit %v, want %v", a.limitHit(), !tc.growOK)
			}
		})
	}
}

// TestRecycledMemoryIsCleared: a region that served one execution shows
// only zeroes to the next, at start and as it grows, including the part
// beyond what a pooled region keeps resident.
func TestRecycledMemoryIsCleared(t *testing.T) {
	const limit = keepBytes + 8*pageSize
	pool := &regionPool{reserve: limit}
	defer pool.close()
	a1 := &allocator{limit: limit, pool: pool}
	first := a1.Allocate(0, limit)
	b := first.Reallocate(2 * pageSize)
	b = first.Reallocate(limit)
	for i := range b {
		b[i] = 0xAA
	}
	a1.release()

	a2 := &allocator{limit: limit, pool: pool}
	defer a2.release()
	second := a2.Allocate(0, limit)
	for _, size := range []uint64{pageSize, 4 * pageSize, limit} {
		got := second.Reallocate(size)
		if !bytes.Equal(got, make([]byte, size)) {
			t.Fatalf("memory of %d bytes is not zero", size)
		}
	}
}

// TestGrowBombStaysVirtual: growing a memory to a 2 GiB limit in 64 MiB
// steps and past it ends at the limit without making the memory resident
// (a grow copies and clears nothing the guest has not touched), and a
// freed region gives back what it held beyond keepBytes.
func TestGrowBombStaysVirtual(t *testing.T) {
	const limit = 2 << 30
	pool := &regionPool{reserve: limit}
	defer pool.close()
	before := selfRSS(t)
	a := &allocator{limit: limit, pool: pool}
	m := a.Allocate(0, 1<<32)
	var size uint64
	for size = 64 << 20; ; size += 64 << 20 {
		b := m.Reallocate(size)
		if b == nil {
			break
		}
		b[len(b)-1] = 1 // the guest touches one byte of each step
	}
	if !a.limitHit() || a.refusedBytes() != limit+64<<20 || a.peakBytes() != limit {
		t.Fatalf("hit %v refused %d peak %d", a.limitHit(), a.refusedBytes(), a.peakBytes())
	}
	if grew := selfRSS(t) - before; grew > 64<<20 {
		t.Errorf("growing to 2 GiB made %d MiB resident", grew>>20)
	}
	a.release()
	// Touch all of a region, free it: what it keeps is bounded.
	a = &allocator{limit: limit, pool: pool}
	b := a.Allocate(0, 1<<32).Reallocate(64 << 20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	a.release()
	if grew := selfRSS(t) - before; grew > keepBytes+32<<20 {
		t.Errorf("a freed region keeps %d MiB resident", grew>>20)
	}
}

// selfRSS returns this process's resident memory from /proc.
func selfRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// BenchmarkGrowBomb grows a memory to a 2 GiB limit in 64 MiB steps (the
// guest touching one byte per step) until the limit refuses a grow.
func BenchmarkGrowBomb(b *testing.B) {
	pool := &regionPool{reserve: 2 << 30}
	defer pool.close()
	for i := 0; i < b.N; i++ {
		a := &allocator{limit: 2 << 30, pool: pool}
		m := a.Allocate(0, 1<<32)
		for size := uint64(64 << 20); ; size += 64 << 20 {
			buf := m.Reallocate(size)
			if buf == nil {
				break
			}
			buf[len(buf)-1] = 1
		}
		a.release()
	}
}
