package truncate

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestCountValues(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{`1`, 1},
		{`"a,b[c{"`, 1},
		{`"\"[,"`, 1},
		{`[]`, 1},
		{`{}`, 1},
		{`[1,2,3]`, 4},
		{`{"a":1,"b":[]}`, 3},
		{`{"a,":"[{","b":{"c":[[],{}]}}`, 6},
		{`[[[["\\",null]]]]`, 6},
	}
	for _, tc := range cases {
		if got := countValues([]byte(tc.in), 1000); got != tc.want {
			t.Errorf("countValues(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if got := countValues([]byte(`[1,2,3,4,5,6]`), 3); got != 4 {
		t.Errorf("countValues stops once over the limit: got %d, want 4", got)
	}
	big := repeatedArray(100, 100)
	if a := testing.AllocsPerRun(10, func() { countValues(big, MaxValues) }); a != 0 {
		t.Errorf("countValues allocates %v times a run, want none", a)
	}
}

// allocatedBy returns the bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// repeatedArray is a result of n references to one array of m zeros, as
// JSON.stringify writes it.
func repeatedArray(n, m int) []byte {
	inner := "[" + strings.Repeat("0,", m-1) + "0]"
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(inner)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func TestFitManyValuesRefused(t *testing.T) {
	in := repeatedArray(16000, 1000) // 32 MB, 16 million values
	var err error
	alloc := allocatedBy(func() { _, _, err = Fit(in, 1024, 0, nil) })
	var tm *TooManyValuesError
	if !errors.As(err, &tm) || tm.Max != MaxValues {
		t.Fatalf("err %v, want TooManyValuesError", err)
	}
	// The compact copy of the input (twice its size under the race
	// detector), and no tree.
	if bound := 2*uint64(len(in)) + 1<<20; alloc > bound {
		t.Errorf("Fit allocated %d bytes for %d bytes of input, more than %d", alloc, len(in), bound)
	}
	t.Logf("%d bytes of input, %d bytes allocated", len(in), alloc)
}

func TestFitMemoryBound(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
	}{
		// Just under MaxValues values, the most a tree is built for.
		{"arrays of numbers", repeatedArray(MaxValues/1001, 1000)},
		{"objects", func() []byte {
			rows := make([]map[string]any, MaxValues/4-1)
			for i := range rows {
				rows[i] = map[string]any{"id": i, "name": "x", "ok": true}
			}
			b, _ := json.Marshal(rows)
			return b
		}()},
		{"long strings", func() []byte {
			b, _ := json.Marshal([]string{strings.Repeat("a", 8<<20), strings.Repeat("b", 8<<20)})
			return b
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			values := countValues(tc.in, MaxValues)
			if values > MaxValues {
				t.Fatalf("%d values, over MaxValues", values)
			}
			var out []byte
			var err error
			alloc := allocatedBy(func() { out, _, err = Fit(tc.in, 1024, 0, nil) })
			if err != nil || len(out) > 1024 || !json.Valid(out) {
				t.Fatalf("Fit: %d bytes, %v", len(out), err)
			}
			// The compact copy (twice its size under the race detector),
			// and the tree: at most 200 bytes a value.
			if bound := 2*uint64(len(tc.in)) + 200*uint64(values) + 1<<20; alloc > bound {
				t.Errorf("Fit allocated %d bytes for %d bytes of input with %d values, more than %d", alloc, len(tc.in), values, bound)
			}
			t.Logf("%d bytes of input, %d values, %d bytes allocated (%.0f a value)", len(tc.in), values, alloc, float64(alloc-uint64(len(tc.in)))/float64(values))
		})
	}
}
