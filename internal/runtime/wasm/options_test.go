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

// clockModule writes 32 letters to stderr: the realtime clock (u64 ns)
// and 8 random bytes, each byte as two letters 'a'+(b>>4), 'a'+(b&15) —
// stderr is text (bytes that are not UTF-8 would become U+FFFD).
func clockModule() []byte {
	var b modBuilder
	clock := b.importFunc("wasi_snapshot_preview1", "clock_time_get", []byte{i32, i64, i32}, []byte{i32})
	random := b.importFunc("wasi_snapshot_preview1", "random_get", []byte{i32, i32}, []byte{i32})
	fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	b.mem(1)
	b.dataAt(32, []byte{64, 0, 0, 0, 32, 0, 0, 0}) // iovec {64, 32}
	body := [][]byte{
		i32c(0), append([]byte{0x42}, sleb(1)...), i32c(0), call(clock), opDrop,
		i32c(8), i32c(8), call(random), opDrop,
	}
	load8, store8 := []byte{0x2d, 0, 0}, []byte{0x3a, 0, 0}
	for i := int32(0); i < 16; i++ {
		body = append(body,
			i32c(64+2*i), i32c(i), load8, i32c(4), []byte{0x76}, i32c('a'), []byte{0x6a}, store8, // shr_u, add
			i32c(65+2*i), i32c(i), load8, i32c(15), []byte{0x71}, i32c('a'), []byte{0x6a}, store8) // and, add
	}
	body = append(body, i32c(2), i32c(32), i32c(1), i32c(48), call(fdWrite), opDrop)
	b.export("_start", 0x00, b.function(nil, nil, body...))
	return b.bytes()
}

func clockAndRandom(t *testing.T, e *Engine) (time.Time, []byte) {
	t.Helper()
	j, _ := job(clockModule(), "", limits.Limits{}, testTools(t))
	out := e.Run(context.Background(), j)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, _ := j.Logs.Entries()
	if len(entries) != 1 || len(entries[0].Message) != 32 {
		t.Fatalf("stderr: %+v, want one line of 32 letters", entries)
	}
	raw := make([]byte, 16)
	for i := range raw {
		raw[i] = (entries[0].Message[2*i]-'a')<<4 | (entries[0].Message[2*i+1] - 'a')
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
