package wasm

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// clockModule writes 16 bytes to stderr: the realtime clock (u64 ns) and 8
// random bytes.
func clockModule() []byte {
	var b modBuilder
	clock := b.importFunc("wasi_snapshot_preview1", "clock_time_get", []byte{i32, i64, i32}, []byte{i32})
	random := b.importFunc("wasi_snapshot_preview1", "random_get", []byte{i32, i32}, []byte{i32})
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	b.mem(1)
	b.dataAt(32, []byte{0, 0, 0, 0, 16, 0, 0, 0}) // iovec {0, 16}
	start := b.function(nil, nil,
		i32c(0), append([]byte{0x42}, sleb(1)...), i32c(0), call(clock), opDrop,
		i32c(8), i32c(8), call(random), opDrop,
		i32c(2), i32c(32), i32c(1), i32c(48), call(fdWrite), opDrop)
	b.export("_start", 0x00, start)
	return b.bytes()
}

func clockAndRandom(t *testing.T, e *Engine) (time.Time, []byte) {
	return clockAndRandomTry(t, e, 0)
}

func clockAndRandomTry(t *testing.T, e *Engine, attempt int) (time.Time, []byte) {
	t.Helper()
	j, _ := job(clockModule(), "", limits.Limits{}, testTools(t))
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, _ := j.Logs.Entries()
	// stderr reaches the logs line by line: a '\n' among the bytes splits
	// them into entries (joined back here), one at the very end ends the
	// last entry.
	var raw []byte
	for i, en := range entries {
		if i > 0 {
			raw = append(raw, '\n')
		}
		raw = append(raw, en.Message...)
	}
	if len(raw) == 15 {
		raw = append(raw, '\n')
	}
	if len(raw) < 16 {
		// A '\r' before a '\n' is not kept either: draw again (real random
		// bytes hold one rarely).
		if attempt < 50 {
			return clockAndRandomTry(t, e, attempt+1)
		}
		t.Fatalf("stderr has %d bytes, want 16", len(raw))
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(raw[:8]))), raw[8:16]
}

func TestOptions(t *testing.T) {
	t.Run("default clock and random are fixed", func(t *testing.T) {
		e := newEngine(t)
		t1, r1 := clockAndRandom(t, e)
		t2, r2 := clockAndRandom(t, e)
		if !t1.Equal(time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)) || !t1.Equal(t2) {
			t.Fatalf("clock = %v, %v, want 2022-01-01 both times", t1, t2)
		}
		if !bytes.Equal(r1, r2) {
			t.Fatalf("random = %x, %x, want the same bytes", r1, r2)
		}
	})
	t.Run("real clock and random", func(t *testing.T) {
		e := newEngine(t, Config{RealClock: true, RealRandom: true})
		before := time.Now()
		t1, r1 := clockAndRandom(t, e)
		_, r2 := clockAndRandom(t, e)
		if t1.Before(before.Add(-time.Minute)) || t1.After(time.Now().Add(time.Minute)) {
			t.Fatalf("clock = %v, want about %v", t1, before)
		}
		if bytes.Equal(r1, r2) {
			t.Fatalf("random = %x twice", r1)
		}
	})
	t.Run("interpreter", func(t *testing.T) {
		e := newEngine(t, Config{Interpreter: true})
		j, _ := job(writeModule(`"interpreted"`), "", limits.Limits{}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err != nil || string(out.Result) != `"interpreted"` {
			t.Fatalf("outcome = %s, %v", out.Result, out.Err)
		}
	})
	t.Run("max memory clamps the job", func(t *testing.T) {
		e := newEngine(t, Config{MaxMemory: 2 * pageSize})
		// memory.grow(2) from 1 page; trap if it fails.
		grow := [][]byte{i32c(2), {0x40, 0x00}, i32c(-1), {0x46, 0x04, 0x40, 0x00, 0x0b}}
		var b modBuilder
		b.mem(1)
		b.export("_start", 0x00, b.function(nil, nil, grow...))
		j, _ := job(b.bytes(), "", limits.Limits{MemoryBytes: 1 << 30}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
			t.Fatalf("outcome = %v, want MEMORY_LIMIT", out.Err)
		}
		j, _ = job(bigMemoryModule(3), "", limits.Limits{MemoryBytes: 1 << 30}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err == nil || out.Err.Kind != fault.KindMemoryLimit {
			t.Fatalf("initial memory over the engine's maximum: outcome = %v, want MEMORY_LIMIT", out.Err)
		}
	})
	t.Run("bad cache dir", func(t *testing.T) {
		if _, err := New(Config{CacheDir: "/dev/null/x"}); err == nil {
			t.Fatal("New succeeded with an unusable cache directory")
		}
	})
}
