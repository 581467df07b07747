package wasm

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// TestWASINeedsMemory: a WASI function that reads or writes memory,
// called by a module without one, is a clean trap that says so.
func TestWASINeedsMemory(t *testing.T) {
	cases := []struct {
		fn      string
		params  []byte
		args    [][]byte
		results []byte
	}{
		{"fd_write", []byte{i32, i32, i32, i32}, [][]byte{i32c(1), i32c(0), i32c(1), i32c(8)}, []byte{i32}},
		{"fd_read", []byte{i32, i32, i32, i32}, [][]byte{i32c(0), i32c(0), i32c(1), i32c(8)}, []byte{i32}},
		{"random_get", []byte{i32, i32}, [][]byte{i32c(0), i32c(8)}, []byte{i32}},
		{"clock_time_get", []byte{i32, i64, i32}, [][]byte{i32c(0), {0x42, 0}, i32c(0)}, []byte{i32}},
		{"args_get", []byte{i32, i32}, [][]byte{i32c(0), i32c(0)}, []byte{i32}},
		{"args_sizes_get", []byte{i32, i32}, [][]byte{i32c(0), i32c(0)}, []byte{i32}},
	}
	e := newEngine(t)
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			var b modBuilder
			f := b.importFunc("wasi_snapshot_preview1", c.fn, c.params, c.results)
			body := append(c.args, call(f), opDrop)
			b.export("_start", 0x00, b.function(nil, nil, body...))
			j, _ := job(b.bytes(), "", limits.Limits{}, nil)
			out := e.Run(context.Background(), j)
			if out.Err == nil || out.Err.Kind != fault.KindScript ||
				out.Err.Message != "the module trapped: wasi_snapshot_preview1."+c.fn+": the module has no memory; define and export one as \"memory\"" {
				t.Fatalf("%v\nstack: %s", out.Err, out.Err.Stack)
			}
			if strings.Contains(out.Err.Stack, "goroutine") {
				t.Fatalf("stack: %s", out.Err.Stack)
			}
		})
	}
}

// TestOutputLimitObserved: the observed value of an OUTPUT_LIMIT is the
// total the guest had written when a write first took it past the
// limit, however it wrote it, with or without loop checks.
func TestOutputLimitObserved(t *testing.T) {
	cases := []struct {
		name          string
		writes, chunk int
		want          int64
	}{
		{"one-byte writes", 2000, 1, 1001},
		{"ten-byte writes", 200, 10, 1010},
		{"one big write", 1, 5000, 5000},
	}
	for _, cfg := range []Config{{}, {NoLoopChecks: true}} {
		e := newEngine(t, cfg)
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/noLoopChecks=%v", c.name, cfg.NoLoopChecks), func(t *testing.T) {
				var b modBuilder
				fdWrite := b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
				b.mem(1)
				b.dataAt(0, []byte{64, 0, 0, 0, byte(c.chunk), byte(c.chunk >> 8), 0, 0})
				b.dataAt(64, bytes.Repeat([]byte("1"), c.chunk))
				var body [][]byte
				for range c.writes {
					body = append(body, i32c(1), i32c(0), i32c(1), i32c(8), call(fdWrite), opDrop)
				}
				b.export("_start", 0x00, b.function(nil, nil, body...))
				j, _ := job(b.bytes(), "", limits.Limits{MaxOutputBytes: 1000}, nil)
				out := e.Run(context.Background(), j)
				if out.Err == nil || out.Err.Kind != fault.KindOutputLimit || out.Err.Limit != 1000 || out.Err.Observed != c.want {
					t.Fatalf("%v (limit %d, observed %d), want observed %d", out.Err, out.Err.Limit, out.Err.Observed, c.want)
				}
			})
		}
	}
}
