package adversarial

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// rawCodec sends bytes as they are: requests no well-behaved client can
// produce (invalid UTF-8 in strings, broken wire format).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

var _ encoding.Codec = rawCodec{}

// rawExecute sends wire bytes as an ExecuteRequest.
func rawExecute(wire []byte) func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
	return func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
		var out []byte
		err := e.srv.connection().Invoke(ctx, "/ptc.v1.RunnerService/Execute", wire, &out, grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return nil, err
		}
		res := &ptcv1.ExecuteResponse{}
		return res, protoUnmarshal(out, res)
	}
}

// wireScript encodes ExecuteRequest{script: {language, source}} by hand.
func wireScript(lang int, source []byte) []byte {
	var script []byte
	script = protowire.AppendTag(script, 1, protowire.VarintType)
	script = protowire.AppendVarint(script, uint64(lang))
	script = protowire.AppendTag(script, 2, protowire.BytesType)
	script = protowire.AppendBytes(script, source)
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	return protowire.AppendBytes(req, script)
}

func protocolCases() []tcase {
	p := func(name string, req *ptcv1.ExecuteRequest, w want, fast bool) tcase {
		return tcase{name: name, family: famProtocol, fast: fast, bound: 15 * time.Second, req: req, want: w}
	}
	bad := func(name string, req *ptcv1.ExecuteRequest, fast bool) tcase {
		return p(name, req, refused(codes.InvalidArgument), fast)
	}
	js := ptcv1.Language_LANGUAGE_JAVASCRIPT
	cs := []tcase{
		bad("request-empty", &ptcv1.ExecuteRequest{}, true),
		bad("language-unspecified", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Source: "return 1"}}, false),
		bad("language-out-of-enum", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: 99, Source: "return 1"}}, false),
		bad("language-negative", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: -1, Source: "return 1"}}, false),
		bad("source-empty", jsReq(""), false),
		bad("source-over-limit", jsReq("//"+strings.Repeat("x", 1<<20)), false),
		p("source-at-limit", jsReq("return 1//"+strings.Repeat("x", 1<<20-len("return 1//"))), succeeds("1"), false),
		bad("input-invalid-json", jsReq("return input", input(`{"a":`)), false),
		bad("input-nan", jsReq("return input", input(`NaN`)), false),
		bad("input-trailing-garbage", jsReq("return input", input(`{} {}`)), false),
		bad("input-over-limit", jsReq("return 1", input(`"`+strings.Repeat("x", 8<<20)+`"`)), false),
		p("input-huge-number", jsReq("return typeof input", input(`1e400`)), succeeds(`"number"`).orRefused(codes.InvalidArgument), false),
		p("input-deep", jsReq("return typeof input", input(strings.Repeat("[", 1e6)+strings.Repeat("]", 1e6))),
			succeeds(`"object"`).or(ScriptError).orRefused(codes.InvalidArgument), false),
		p("input-duplicate-keys", jsReq("return input.a", input(`{"a":1,"a":2}`)), succeeds("1", "2").orRefused(codes.InvalidArgument), false),
		p("input-proto-key", jsReq("return [typeof ({}).polluted, Object.keys(input)]", input(`{"__proto__":{"polluted":1}}`)),
			succeeds(`["undefined",["__proto__"]]`, `["undefined",[]]`).orRefused(codes.InvalidArgument), false),
		bad("schema-invalid-json", jsReq("return 1", schema(`{"type":`)), false),
		bad("schema-invalid-type", jsReq("return 1", schema(`{"type":"nonsense"}`)), false),
		bad("schema-external-ref", jsReq("return 1", schema(`{"$ref":"https://example.com/s.json"}`)), false),
		bad("schema-file-ref", jsReq("return 1", schema(`{"$ref":"file:///etc/passwd"}`)), true),
		bad("schema-relative-ref", jsReq("return 1", schema(`{"$ref":"../../etc/passwd#/x"}`)), false),
		p("schema-self-ref", jsReq("return 1", schema(`{"$ref":"#"}`)), succeeds("1").or(SchemaViolation).orRefused(codes.InvalidArgument), false),
		p("schema-deep", jsReq("return 1", schema(strings.Repeat(`{"items":`, 100000)+`{}`+strings.Repeat("}", 100000))),
			succeeds("1").orRefused(codes.InvalidArgument), false),
		p("schema-violated", jsReq(`return {n: "x"}`, schema(`{"type":"object","properties":{"n":{"type":"integer"}}}`)), fails(SchemaViolation), false),
		p("schema-backtracking-pattern", jsReq(`return "a".repeat(40) + "!"`, schema(`{"type":"string","pattern":"^(a+)+$"}`)), fails(SchemaViolation), false),
		p("schema-huge-enum", jsReq(`return "z"`, schema(`{"enum":[`+strings.Repeat(`"aaaaaaaaaa",`, 80000)+`"z"]}`)), succeeds(`"z"`).orRefused(codes.InvalidArgument), false),
		bad("limit-negative-timeout", jsReq("return 1", func(r *ptcv1.ExecuteRequest) { limits(r).Timeout = durationpb.New(-time.Second) }), false),
		bad("limit-invalid-duration", jsReq("return 1", func(r *ptcv1.ExecuteRequest) { limits(r).CpuTime = &durationpb.Duration{Seconds: 1, Nanos: 2e9} }), false),
		bad("limit-negative-memory", jsReq("return 1", memory(-1)), false),
		bad("limit-negative-calls", jsReq("return 1", maxCalls(-1)), false),
		bad("limit-negative-output", jsReq("return 1", maxOutput(-5)), false),
		p("limit-one-nanosecond", jsReq("for (;;) {}", timeout(1), cpu(1)), fails(Timeout, CPULimit), false),
		p("limit-one-byte-memory", jsReq(`return "x".repeat(256 << 20).length`, memory(1)), fails(MemoryLimit, ScriptError), false),
		p("limit-one-byte-output", jsReq("return 10", maxOutput(1)), fails(OutputLimit), false),
		p("limit-one-concurrent-call", jsReq(`return (await Promise.all(Array.from({length: 50}, () => tools.get_budget_by_level({level: "mid"})))).length`, maxConcurrent(1)), succeeds("50"), false),
		bad("clock-start-out-of-range", jsReq("return Date.now()", func(r *ptcv1.ExecuteRequest) {
			r.Deterministic = true
			r.ClockStart = &timestamppb.Timestamp{Seconds: 1 << 40}
		}), false),
		p("clock-start-far-past", jsReq("return new Date().getUTCFullYear()", func(r *ptcv1.ExecuteRequest) {
			r.Deterministic = true
			r.ClockStart = &timestamppb.Timestamp{Seconds: -62135596800}
		}), succeeds("1"), false),
		bad("allowed-tools-flood", jsReq("return 1", func(r *ptcv1.ExecuteRequest) {
			for i := 0; i < 100000; i++ {
				r.AllowedTools = append(r.AllowedTools, fmt.Sprintf("tool_%d", i))
			}
		}), false),
		p("allowed-tools-duplicates", jsReq("return 1", allowed("get_team_members", "get_team_members")), succeeds("1"), false),
		p("typescript-syntax-error", tsReq("const x: number = ;\nreturn x"), fails(SyntaxError).and(func(r *ptcv1.ExecuteResponse) error {
			if r.GetError().GetLine() != 1 {
				return fmt.Errorf("line %d", r.GetError().GetLine())
			}
			return nil
		}), false),
		p("javascript-with-wasm-bytes", &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: js, Source: "return 1", WasmModule: []byte{0, 1, 2}}},
			succeeds("1").orRefused(codes.InvalidArgument), false),
		{
			name: "message-over-grpc-limit", family: famProtocol, bound: 15 * time.Second,
			req: jsReq("return 1", input(`"`+strings.Repeat("x", 26<<20)+`"`)), want: refused(codes.ResourceExhausted),
		},
		{
			name: "wire-garbage", family: famProtocol, bound: 10 * time.Second,
			do: rawExecute([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}), want: refused(codes.InvalidArgument),
		},
		{
			name: "wire-invalid-utf8-source", family: famProtocol, bound: 10 * time.Second,
			do: rawExecute(wireScript(1, []byte("return \"\xff\xfe\""))), want: refused(codes.InvalidArgument),
		},
		{
			name: "wire-unknown-fields", family: famProtocol, bound: 10 * time.Second,
			do:   rawExecute(append(wireScript(1, []byte("return 1")), protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7)...)),
			want: succeeds("1"),
		},
	}
	return append(cs, wasmCases()...)
}

// wasmCases: bad modules, memory.grow bombs, stdout and stderr floods,
// bad pointers, ABI misuse.
func wasmCases() []tcase {
	w := func(name string, module []byte, wt want, fast bool, opts ...opt) tcase {
		return tcase{name: name, family: famProtocol, fast: fast, bound: 15 * time.Second,
			req: wasmReq(module, append([]opt{timeout(5 * time.Second), memory(64 * MiB)}, opts...)...), want: wt}
	}
	bad := func(name string, module []byte, fast bool) tcase {
		return w(name, module, refused(codes.InvalidArgument), fast)
	}
	minimal := wasmPrint(`{"ok":true}`)
	sum := sha256.Sum256(minimal)
	digest := hex.EncodeToString(sum[:])
	withHash := func(h string) opt { return func(r *ptcv1.ExecuteRequest) { r.Script.ModuleSha256 = h } }
	trap := fails(ScriptError)
	cs := []tcase{
		w("wasm-minimal", minimal, succeeds(`{"ok":true}`), true),
		w("wasm-by-digest", nil, succeeds(`{"ok":true}`), false, withHash(digest)),
		w("wasm-unknown-digest", nil, refused(codes.FailedPrecondition), false, withHash(strings.Repeat("ab", 32))),
		w("wasm-malformed-digest", nil, refused(codes.InvalidArgument), false, withHash("../../etc/passwd")),
		w("wasm-digest-mismatch", minimal, refused(codes.InvalidArgument), false, withHash(strings.Repeat("00", 32))),
		bad("wasm-garbage", []byte("definitely not a module"), true),
		bad("wasm-empty-magic", []byte{0, 'a', 's', 'm'}, false),
		bad("wasm-truncated", minimal[:len(minimal)-3], false),
		bad("wasm-foreign-import", wmodule{imports: []wimport{{"env", "system", sig{[]byte{i32}, []byte{i32}}}}, funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1}.bytes(), false),
		bad("wasm-wrong-import-signature", wmodule{imports: []wimport{{"ptc_v1", "call", sig{[]byte{i32}, nil}}}, funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1}.bytes(), false),
		bad("wasm-imported-memory", wmodule{rawImport: append(append(name("env"), name("memory")...), 0x02, 0x00, 0x01), funcs: []wfunc{{typ: sig{}, export: "_start"}}, noMemory: true}.bytes(), false),
		bad("wasm-no-start", wmodule{funcs: []wfunc{{typ: sig{}, export: "main"}}, memPages: 1}.bytes(), false),
		bad("wasm-start-with-params", wmodule{funcs: []wfunc{{typ: sig{[]byte{i32}, nil}, export: "_start"}}, memPages: 1}.bytes(), false),
		bad("wasm-huge-table", wmodule{funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1, table: 1 << 30}.bytes(), false),
		bad("wasm-over-size-limit", wmodule{funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1, custom: 17 << 20}.bytes(), false),
		w("wasm-large-custom-section", wmodule{funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1, custom: 8 << 20}.bytes(), succeeds("null"), false),
		w("wasm-initial-memory-over-limit", wmodule{funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 65536}.bytes(), fails(MemoryLimit).orRefused(codes.InvalidArgument), false),
		w("wasm-data-out-of-bounds", wmodule{funcs: []wfunc{{typ: sig{}, export: "_start"}}, memPages: 1, data: []wdata{{70000, []byte("x")}}}.bytes(),
			fails(ScriptError).orRefused(codes.InvalidArgument), false),
		w("wasm-grow-bomb", wasmGrow(16, true), fails(MemoryLimit), true),
		w("wasm-memory-limit-reported", wasmGrow(16, true), fails(MemoryLimit).and(errorLimit(64*MiB)), false),
		w("wasm-grow-one-shot", wasmGrow(60000, true), fails(MemoryLimit), false),
		w("wasm-grow-refused-handled", wasmGrow(1, false), succeeds("1"), false),
		{
			name: "wasm-grow-bomb-big-limit", family: famProtocol, bound: 30 * time.Second, serverSettle: 256 * MiB,
			req:  wasmReq(wasmGrow(1024, true), timeout(20*time.Second), memory(2<<30)),
			want: fails(MemoryLimit).and(errorLimit(2 << 30)),
			// A grow that copies nothing: ptcd's RSS hardly moves.
			serverGrowth: 256 * MiB,
		},
		{
			// Tables live outside linear memory: a grow past the bound on
			// all tables is refused (-1) instead of taking the host's memory.
			name: "wasm-table-grow-bomb", family: famProtocol, fast: true, bound: 30 * time.Second, serverGrowth: 256 * MiB,
			req:  wasmReq(wasmTableGrow(100_000_000, false), timeout(20*time.Second), memory(256*MiB)),
			want: succeeds("-1"),
		},
		{
			name: "wasm-table-grow-loop", family: famProtocol, bound: 30 * time.Second, serverGrowth: 256 * MiB,
			req:  wasmReq(wasmTableGrow(1<<19, true), timeout(20*time.Second), memory(256*MiB)),
			want: succeeds("-1"),
		},
		w("wasm-spin-cpu", wasmSpin(), fails(CPULimit), false, timeout(10*time.Second), cpu(300*time.Millisecond)),
		w("wasm-spin-timeout", wasmSpin(), fails(Timeout), false, timeout(500*time.Millisecond), cpu(10*time.Second)),
		w("wasm-stdout-flood", wasmEndlessStdout(), fails(OutputLimit), false),
		w("wasm-stdout-invalid-json", wasmPrint(`{"a":`), fails(ScriptError), false),
		w("wasm-stdout-two-values", wasmPrint(`1 2`), fails(ScriptError), false),
		{
			name: "wasm-stderr-flood", family: famProtocol, fast: true, bound: 30 * time.Second, serverGrowth: 128 * MiB,
			req:  wasmReq(wasmFlood(2, 'x', 1024, 4), timeout(20*time.Second), memory(64*MiB), maxLogs(64*KiB)),
			want: succeeds("null").and(logsBounded),
		},
		{
			name: "wasm-stderr-newline-flood", family: famProtocol, fast: true, bound: 30 * time.Second, serverGrowth: 128 * MiB,
			req:  wasmReq(wasmFlood(2, '\n', 1024, 2), timeout(20*time.Second), memory(64*MiB), maxLogs(64*KiB)),
			want: succeeds("null").and(logsBounded),
		},
		w("wasm-exit-code", wasmExit(3), fails(ScriptError), false),
		w("wasm-exit-zero", wasmExit(0), succeeds("null"), false),
		w("wasm-recursion", wasmRecurse(), trap, false),
		w("wasm-unknown-tool", wasmCallAndPrint("no_such_tool", `{}`), succeeds().and(func(r *ptcv1.ExecuteResponse) error {
			if !strings.Contains(r.GetResultJson(), `"unknown_tool"`) || len(r.GetTrace()) != 1 || r.GetTrace()[0].GetErrorCode() != "unknown_tool" || r.GetStats().GetToolCalls() != 1 {
				return fmt.Errorf("result %s, trace %v, stats.tool_calls %d", r.GetResultJson(), r.GetTrace(), r.GetStats().GetToolCalls())
			}
			return nil
		}), false),
		w("wasm-hostile-tool-name", wasmCallAndPrint("__proto__", `{}`), succeeds().and(func(r *ptcv1.ExecuteResponse) error {
			if !strings.Contains(r.GetResultJson(), `"unknown_tool"`) {
				return fmt.Errorf("result %s", r.GetResultJson())
			}
			return nil
		}), false),
		w("wasm-tool-call", wasmCallAndPrint("get_budget_by_level", `{"level":"staff"}`), succeeds().and(func(r *ptcv1.ExecuteResponse) error {
			if !strings.Contains(r.GetResultJson(), `"level":"staff"`) {
				return fmt.Errorf("result %s", r.GetResultJson())
			}
			return nil
		}), false),
		w("wasm-call-invalid-json-args", wasmCallAndPrint("get_budget_by_level", `{"level":`), succeeds().and(func(r *ptcv1.ExecuteResponse) error {
			if !strings.Contains(r.GetResultJson(), `"code"`) {
				return fmt.Errorf("result %s", r.GetResultJson())
			}
			return nil
		}), false),
		// Bytes that are not valid UTF-8 from a guest never reach a string
		// field of the response (gRPC would refuse to marshal it).
		w("wasm-stdout-invalid-utf8", wasmPrint("\"\xff\""), fails(ScriptError).and(messageHas("not valid UTF-8")), true),
		w("wasm-stdout-surrogate", wasmPrint("[\"\xed\xa0\x80\"]"), fails(ScriptError).and(messageHas("not valid UTF-8")), false),
		w("wasm-stderr-invalid-utf8", guest(0, []wdata{{memText, []byte("a\xffb\n1")}}, write(2, memText, 4), write(1, memText+4, 1)).bytes(),
			succeeds("1").and(func(r *ptcv1.ExecuteResponse) error {
				for _, l := range r.GetLogs() {
					if l.GetMessage() == "a\uFFFDb" {
						return nil
					}
				}
				return fmt.Errorf("logs %v", r.GetLogs())
			}), true),
		w("wasm-args-invalid-utf8", wasmCallAndPrint("get_budget_by_level", "{\"level\":\"\xff\"}"), succeeds().and(refusedCall("invalid_arguments")), true),
		w("wasm-tool-name-invalid-utf8", wasmCallAndPrint("get\xff", `{}`), succeeds().and(refusedCall("unknown_tool")), true),
		w("wasm-call-flood", wasmCallFlood(false), fails(ToolCallLimit).and(toolCalls(21, 20, "tool_call_limit")), false, maxCalls(20)),
		w("wasm-handle-hoard", wasmCallFlood(true), trap, false, maxCalls(5000)),
		w("wasm-bad-name-pointer", guest(0, nil, i32c(-16), i32c(16), i32c(0), i32c(0), i32c(memOut), call(fnCall), opDrop).bytes(), trap, true),
		w("wasm-bad-args-pointer", guest(0, []wdata{{memName, []byte("get_team_members")}}, i32c(memName), i32c(16), i32c(-100), i32c(1000), i32c(memOut), call(fnCall), opDrop).bytes(), trap, false),
		w("wasm-huge-name-length", guest(0, nil, i32c(memName), i32c(0x7fffffff), i32c(0), i32c(0), i32c(memOut), call(fnCall), opDrop).bytes(), trap, false),
		w("wasm-bad-out-pointer", guest(0, []wdata{{memName, []byte("get_budget_by_level")}, {memArgs, []byte(`{"level":"mid"}`)}},
			i32c(memName), i32c(19), i32c(memArgs), i32c(15), i32c(-4), call(fnCall), opDrop).bytes(), trap, false),
		w("wasm-read-bogus-handle", guest(0, nil, i32c(12345), i32c(memBuf), i32c(100), call(fnRead), opDrop).bytes(), trap, false),
		w("wasm-drop-bogus-handle", guest(0, nil, i32c(0), call(fnDrop), i32c(-1), call(fnDrop)).bytes(), trap, false),
		w("wasm-read-short-buffer", wasmCall("get_budget_by_level", `{"level":"mid"}`, 0, opDrop,
			i32c(memOut), load(0), i32c(memBuf), i32c(1), call(fnRead), opDrop).bytes(), trap, false),
		w("wasm-read-past-memory", wasmCall("get_budget_by_level", `{"level":"mid"}`, 0, opDrop,
			i32c(memOut), load(0), i32c(4*65536-2), i32c(1000), call(fnRead), opDrop).bytes(), trap, false),
		w("wasm-fd-write-bad-iovec", guest(0, nil,
			i32c(1), i32c(-8), i32c(1), i32c(memNW), call(fnFdWrite),
			opIf, i32c(9), call(fnProcExit), opEnd).bytes(), trap, false),
		w("wasm-wasi-without-memory", wmodule{imports: stdImports, noMemory: true,
			funcs: []wfunc{{typ: sig{}, export: "_start", body: code(i32c(1), i32c(0), i32c(1), i32c(8), call(fnFdWrite), opDrop)}}}.bytes(),
			trap.and(messageHas("wasi_snapshot_preview1.fd_write: the module has no memory")).and(func(r *ptcv1.ExecuteResponse) error {
				if strings.Contains(r.GetError().GetStack(), "goroutine") {
					return fmt.Errorf("the host's Go stack in the error: %s", r.GetError().GetStack())
				}
				return nil
			}), true),
		w("wasm-call-without-memory", wmodule{imports: stdImports, noMemory: true,
			funcs: []wfunc{{typ: sig{}, export: "_start", body: code(i32c(0), i32c(1), i32c(0), i32c(0), i32c(0), call(fnCall), opDrop)}}}.bytes(), trap, false),
	}
	return cs
}

// messageHas checks that the execution error's message contains sub.
func messageHas(sub string) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		if !strings.Contains(r.GetError().GetMessage(), sub) {
			return fmt.Errorf("message %q does not contain %q", r.GetError().GetMessage(), sub)
		}
		return nil
	}
}

// refusedCall checks a guest that made one tool call, refused with code
// and printed the error: the call is counted and traced.
func refusedCall(code string) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		tr := r.GetTrace()
		if !strings.Contains(r.GetResultJson(), `"`+code+`"`) || len(tr) != 1 || tr[0].GetErrorCode() != code || r.GetStats().GetToolCalls() != 1 {
			return fmt.Errorf("result %s, trace %v, stats.tool_calls %d", r.GetResultJson(), tr, r.GetStats().GetToolCalls())
		}
		return nil
	}
}
