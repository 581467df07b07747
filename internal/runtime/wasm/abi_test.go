package wasm

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// abiModule builds a guest that uses the ptc_v1 functions directly, as a C
// or Rust guest would. body receives the function indices.
type abiFuncs struct{ call, batch, read, drop, fdWrite uint32 }

func abiModule(withMemory bool, data map[int32]string, body func(f abiFuncs) [][]byte) []byte {
	var b modBuilder
	var f abiFuncs
	f.call = b.importFunc("ptc_v1", "call", []byte{i32, i32, i32, i32, i32}, []byte{i32})
	f.batch = b.importFunc("ptc_v1", "call_batch", []byte{i32, i32, i32}, []byte{i32})
	f.read = b.importFunc("ptc_v1", "read", []byte{i32, i32, i32}, []byte{i32})
	f.drop = b.importFunc("ptc_v1", "drop", []byte{i32}, nil)
	f.fdWrite = b.importFunc("wasi_snapshot_preview1", "fd_write", []byte{i32, i32, i32, i32}, []byte{i32})
	if withMemory {
		b.mem(1)
	}
	for off, s := range data {
		b.dataAt(off, []byte(s))
	}
	b.export("_start", 0x00, b.function(nil, nil, body(f)...))
	return b.bytes()
}

func load(addr int32) []byte { return append(i32c(addr), 0x28, 0x02, 0x00) }

// storeFrom copies the i32 at src to dst.
func storeFrom(dst, src int32) []byte {
	return append(append(i32c(dst), load(src)...), 0x36, 0x02, 0x00)
}

// Memory layout of the ABI test guests: out record at 0 (handle, length),
// iovec at 16 {ptr 300, length copied from the out record}, nwritten at
// 24, tool name at 100, arguments or batch request at 120, payload at 300.
var abiData = map[int32]string{16: "\x2c\x01\x00\x00", 100: "echo", 120: `{"a":1}`, 140: `[{"tool":"echo","args":{"b":2}},{"tool":"fail"}]`, 200: "not json"}

// printPayload reads the payload of the out record at 0 into 300 and
// writes it to stdout.
func printPayload(f abiFuncs) [][]byte {
	return [][]byte{
		load(0), i32c(300), i32c(60000), call(f.read), opDrop,
		storeFrom(20, 4),
		i32c(1), i32c(16), i32c(1), i32c(24), call(f.fdWrite), opDrop,
	}
}

func TestABI(t *testing.T) {
	e := newEngine(t)
	cases := []struct {
		name     string
		noMemory bool
		body     func(f abiFuncs) [][]byte
		want     string // result JSON, or
		trap     string // part of the SCRIPT_ERROR message
	}{
		{name: "call and read", body: func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(100), i32c(4), i32c(120), i32c(7), i32c(0), call(f.call), opDrop}, printPayload(f)...)
		}, want: `{"a":1}`},
		{name: "empty arguments mean an empty object", body: func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(100), i32c(4), i32c(0), i32c(0), i32c(0), call(f.call), opDrop}, printPayload(f)...)
		}, want: `{}`},
		{name: "batch", body: func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(140), i32c(48), i32c(0), call(f.batch), opDrop}, printPayload(f)...)
		}, want: `[{"ok":true,"result":{"b":2}},{"ok":false,"error":{"name":"ToolError","tool":"fail","code":"not_found","message":"no such record"}}]`},
		{name: "malformed batch is an error payload", body: func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(200), i32c(8), i32c(0), call(f.batch), opDrop}, printPayload(f)...)
		}, want: `{"name":"ToolArgumentError","tool":"","code":"invalid_batch","message":"invalid batch request: request is not JSON: send a JSON array of {\"tool\",\"args\"} objects"}`},
		{name: "overlong tool name is an unknown tool", body: func(f abiFuncs) [][]byte {
			return append([][]byte{i32c(0), i32c(1000), i32c(0), i32c(0), i32c(0), call(f.call), opDrop}, printPayload(f)...)
		}, want: ""},
		{name: "drop then read traps", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(0), i32c(0), i32c(0), call(f.call), opDrop,
				load(0), call(f.drop), load(0), i32c(300), i32c(100), call(f.read), opDrop}
		}, trap: "read: unknown result handle 1"},
		{name: "out pointer outside memory", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(0), i32c(0), i32c(65532), call(f.call), opDrop}
		}, trap: "out_ptr 65532 does not leave 8 bytes"},
		{name: "name outside memory", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(65530), i32c(100), i32c(0), i32c(0), i32c(0), call(f.call), opDrop}
		}, trap: "tool name (offset 65530, length 100) is outside"},
		{name: "arguments outside memory", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(-1), i32c(2), i32c(0), call(f.call), opDrop}
		}, trap: "arguments (offset 4294967295, length 2) is outside"},
		{name: "read into a short buffer", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(120), i32c(7), i32c(0), call(f.call), opDrop,
				load(0), i32c(300), i32c(3), call(f.read), opDrop}
		}, trap: "buffer of 3 bytes is too small for result 1 of 7 bytes"},
		{name: "read past the end of memory", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(100), i32c(4), i32c(120), i32c(7), i32c(0), call(f.call), opDrop,
				load(0), i32c(65533), i32c(100), call(f.read), opDrop}
		}, trap: "read: buffer (offset 65533, length 7) is outside"},
		{name: "unknown handle", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(42), i32c(300), i32c(10), call(f.read), opDrop}
		}, trap: "unknown result handle 42"},
		{name: "drop of an unknown handle", body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(7), call(f.drop)}
		}, trap: "drop: unknown result handle 7"},
		{name: "no memory", noMemory: true, body: func(f abiFuncs) [][]byte {
			return [][]byte{i32c(0), i32c(0), i32c(0), i32c(0), i32c(0), call(f.call), opDrop}
		}, trap: "has no memory"},
		{name: "too many unread results", body: func(f abiFuncs) [][]byte {
			var body [][]byte
			for i := 0; i <= 1024; i++ {
				body = append(body, i32c(100), i32c(4), i32c(0), i32c(0), i32c(0), call(f.call), opDrop)
			}
			return body
		}, trap: "1024 results are unread"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mod := abiModule(!tc.noMemory, abiData, tc.body)
			if tc.noMemory {
				mod = abiModule(false, nil, tc.body)
			}
			j, _ := job(mod, "", limits.Limits{MaxToolCalls: 5000}, testTools(t))
			out := e.Run(context.Background(), j)
			if tc.trap != "" {
				if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, tc.trap) {
					t.Fatalf("outcome = %v, want SCRIPT_ERROR containing %q", out.Err, tc.trap)
				}
				return
			}
			if out.Err != nil {
				t.Fatalf("run failed: %v", out.Err)
			}
			if tc.want == "" {
				if !strings.Contains(string(out.Result), `"code":"unknown_tool"`) {
					t.Fatalf("result = %s, want an unknown_tool error", out.Result)
				}
				return
			}
			jsonEqual(t, out.Result, []byte(tc.want))
		})
	}
}

func TestBatchTraceFollowsRequestOrder(t *testing.T) {
	e := newEngine(t)
	mod := abiModule(true, abiData, func(f abiFuncs) [][]byte {
		return append([][]byte{i32c(140), i32c(48), i32c(0), call(f.batch), opDrop}, printPayload(f)...)
	})
	for i := 0; i < 5; i++ {
		j, d := job(mod, "", limits.Limits{MaxConcurrentToolCalls: 2}, testTools(t))
		if out := e.Run(context.Background(), j); out.Err != nil {
			t.Fatal(out.Err)
		}
		trace := d.Trace()
		if len(trace) != 2 || trace[0].Tool != "echo" || trace[0].Seq != 1 || trace[1].Tool != "fail" || trace[1].Seq != 2 {
			t.Fatalf("trace = %+v, want echo #1 then fail #2", trace)
		}
	}
}

func TestJobWithoutTools(t *testing.T) {
	e := newEngine(t)
	mod := abiModule(true, abiData, func(f abiFuncs) [][]byte {
		return append([][]byte{i32c(100), i32c(4), i32c(0), i32c(0), i32c(0), call(f.call), opDrop}, printPayload(f)...)
	})
	j, _ := job(mod, "", limits.Limits{}, nil)
	j.Tools = nil
	out := e.Run(context.Background(), j)
	if out.Err != nil || !strings.Contains(string(out.Result), `"code":"unknown_tool"`) {
		t.Fatalf("outcome = %s, %v; want an unknown_tool error result", out.Result, out.Err)
	}
}
