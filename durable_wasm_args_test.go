package ptc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools"
)

// askModule is a WASM guest that calls the client tool "ask" once — with
// ptc_v1.call and the arguments args (none when empty), or with
// ptc_v1.call_batch and the request batch — and writes the payload it
// gets (a result, or for a batch the results array) to stdout.
func askModule(args, batch string) []byte {
	const (
		name, argsAt, out, iov, written, buf = 100, 200, 16, 32, 40, 8192
	)
	leb := func(v int64) []byte { // signed LEB128
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	i32 := func(v int) []byte { return append([]byte{0x41}, leb(int64(v))...) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	str := func(s string) []byte { return append(leb(int64(len(s))), s...) }
	section := func(id byte, body []byte) []byte { return cat([]byte{id}, leb(int64(len(body))), body) }
	load := []byte{0x28, 2, 0}
	store := []byte{0x36, 2, 0}

	var callIt []byte
	if batch != "" {
		callIt = cat(i32(argsAt), i32(len(batch)), i32(out), []byte{0x10, 1, 0x1a})
	} else {
		callIt = cat(i32(name), i32(3), i32(argsAt), i32(len(args)), i32(out), []byte{0x10, 0, 0x1a})
	}
	body := cat([]byte{1, 1, 0x7f}, // one i32 local
		callIt,
		i32(out), load, i32(buf), i32(out+4), load, []byte{0x10, 2, 0x21, 0}, // n = read(handle, buf, len)
		i32(iov), i32(buf), store, i32(iov+4), []byte{0x20, 0}, store,
		i32(1), i32(iov), i32(1), i32(written), []byte{0x10, 3, 0x1a, 0x0b})
	data := args + batch
	return cat([]byte("\x00asm\x01\x00\x00\x00"),
		section(1, cat([]byte{4},
			[]byte{0x60, 5, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f}, // call
			[]byte{0x60, 3, 0x7f, 0x7f, 0x7f, 1, 0x7f},             // call_batch, read
			[]byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f},       // fd_write
			[]byte{0x60, 0, 0})), // _start
		section(2, cat([]byte{4},
			str("ptc_v1"), str("call"), []byte{0, 0},
			str("ptc_v1"), str("call_batch"), []byte{0, 1},
			str("ptc_v1"), str("read"), []byte{0, 1},
			str("wasi_snapshot_preview1"), str("fd_write"), []byte{0, 2})),
		section(3, []byte{1, 3}),
		section(5, []byte{1, 0, 1}),
		section(7, cat([]byte{2}, str("memory"), []byte{2, 0}, str("_start"), []byte{0, 4})),
		section(10, cat([]byte{1}, leb(int64(len(body))), body)),
		section(11, cat([]byte{2},
			[]byte{0}, i32(name), []byte{0x0b}, str("ask"),
			[]byte{0}, i32(argsAt), []byte{0x0b}, str(data))),
	)
}

// TestResumableWASMWithoutArguments: a WASM call with no arguments (none,
// null, or a batch entry without args) is the call with {} — it pauses
// with {} and its re-run on resume matches the paused run instead of
// diverging.
func TestResumableWASMWithoutArguments(t *testing.T) {
	cases := []struct {
		name, args, batch, want string
	}{
		{"no arguments", "", "", `"ans"`},
		{"null", "null", "", `"ans"`},
		{"empty object", "{}", "", `"ans"`},
		{"spaced object", " { } ", "", `"ans"`},
		{"batch without args", "", `[{"tool":"ask"}]`, `[{"ok":true,"result":"ans"}]`},
		{"batch with null args", "", `[{"tool":"ask","args":null}]`, `[{"ok":true,"result":"ans"}]`},
	}
	// Nothing is parked: every Resume re-runs the guest from the start —
	// in this process, or in a worker process, where a resumable module
	// runs (and is compiled) too.
	inproc, err := ptc.NewRunner(ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1", Parked: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer inproc.Close()
	workers, err := ptc.NewRunner(ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1"}),
		ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer workers.Close()
	ctx := context.Background()
	for _, c := range cases {
		for _, r := range []*ptc.Runner{inproc, workers} {
			name := c.name + "/inprocess"
			if r == workers {
				name = c.name + "/worker"
			}
			t.Run(name, func(t *testing.T) {
				res, err := r.Execute(ctx, ptc.Request{Language: ptc.LanguageWASM, Module: askModule(c.args, c.batch), Resumable: true,
					ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask"}}}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Pending) != 1 || res.Pending[0].Tool != "ask" {
					t.Fatalf("pause: %+v %v", res.Pending, res.Error)
				}
				if got := string(res.Pending[0].Arguments); got != "{}" && c.args != " { } " {
					t.Fatalf("pending arguments %s, want {}", got)
				}
				res, err = r.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`"ans"`)})
				if err != nil {
					t.Fatal(err)
				}
				if res.Error != nil || string(res.Result) != c.want {
					t.Fatalf("resumed: %s %v", res.Result, res.Error)
				}
			})
		}
	}
}

// TestResumableJSWithoutArguments: the same holds for JavaScript (no
// arguments, undefined, null).
func TestResumableJSWithoutArguments(t *testing.T) {
	r, err := ptc.NewRunner(ptc.WithDurable(ptc.Durable{Keys: testKeys, SigningKey: "k1", Parked: -1}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for _, src := range []string{`return await tools.ask()`, `return await tools.ask(undefined)`, `return await tools.ask({})`} {
		t.Run(src, func(t *testing.T) {
			res, err := r.Execute(ctx, ptc.Request{Source: src, Resumable: true,
				ClientTools: []tools.Tool{{Definition: tools.Definition{Name: "ask"}}}})
			if err != nil || len(res.Pending) != 1 {
				t.Fatalf("pause: %v %+v %v", err, res.Pending, res.Error)
			}
			res, err = r.Resume(ctx, res.Continuation, ptc.Answer{CallID: res.Pending[0].CallID, Output: json.RawMessage(`"ans"`)})
			if succeeded(t, res, err); string(res.Result) != `"ans"` {
				t.Fatalf("resumed: %s", res.Result)
			}
		})
	}
}
