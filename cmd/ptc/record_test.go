package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ptcrun/ptc/internal/cassette"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/server"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

const expensesJS = "../../examples/expenses.js"

// traceOf decodes the result and trace of a --json response.
func traceOf(t *testing.T, stdout string) (string, []*ptcv1.ToolCallRecord) {
	t.Helper()
	var res ptcv1.ExecuteResponse
	if err := protojson.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output: %v\n%.300s", err, stdout)
	}
	return res.GetResultJson(), res.GetTrace()
}

func TestRecordReplayExpenses(t *testing.T) {
	tape := filepath.Join(t.TempDir(), "expenses.jsonl")
	code, recOut, stderr := ptcMain(t, "run", expensesJS, "--record", tape, "--json")
	if code != exitOK || !strings.Contains(stderr, "recorded 26 tool calls") {
		t.Fatalf("record: exit %d: %s", code, stderr)
	}
	code, repOut, stderr := ptcMain(t, "run", "--replay", tape, "--json")
	if code != exitOK || !strings.Contains(stderr, "replay matches the recording (26 tool calls)") {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	recRes, recTrace := traceOf(t, recOut)
	repRes, repTrace := traceOf(t, repOut)
	if recRes == "" || recRes != repRes {
		t.Fatalf("results differ:\n%s\n%s", recRes, repRes)
	}
	if len(recTrace) != 26 || len(repTrace) != len(recTrace) {
		t.Fatalf("traces: %d and %d calls", len(recTrace), len(repTrace))
	}
	for i := range recTrace {
		a, b := recTrace[i], repTrace[i]
		if a.GetSeq() != b.GetSeq() || a.GetTool() != b.GetTool() || a.GetArgumentsJson() != b.GetArgumentsJson() || a.GetResultJson() != b.GetResultJson() {
			t.Fatalf("call %d: recorded %d %s %s, replayed %d %s %s", i, a.GetSeq(), a.GetTool(), a.GetArgumentsJson(), b.GetSeq(), b.GetTool(), b.GetArgumentsJson())
		}
	}
	// The replayed script can also be given explicitly.
	if code, _, stderr := ptcMain(t, "run", expensesJS, "--replay", tape); code != exitOK || strings.Contains(stderr, "differs from the recorded script") {
		t.Fatalf("replay with the script: exit %d: %s", code, stderr)
	}
}

func TestReplayDivergenceCLI(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "expenses.jsonl")
	if code, _, stderr := ptcMain(t, "run", expensesJS, "--record", tape); code != exitOK {
		t.Fatalf("record: %s", stderr)
	}
	src, err := os.ReadFile(expensesJS)
	if err != nil {
		t.Fatal(err)
	}
	edited := func(name, old, new string) string {
		p := filepath.Join(dir, name)
		if !strings.Contains(string(src), old) {
			t.Fatalf("%q not in the script", old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(src), old, new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw, err := os.ReadFile(tape)
	if err != nil {
		t.Fatal(err)
	}
	answer := filepath.Join(dir, "answer.jsonl")
	lines := strings.SplitN(string(raw), "\n", 3)
	lines[1] = strings.Replace(lines[1], `"id":"eng-01"`, `"id":"eng-42"`, 1)
	if err := os.WriteFile(answer, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"changed script argument", []string{edited("q2.js", `params.quarter || "Q3"`, `params.quarter || "Q2"`)}, []string{
			"differs from the recorded script",
			"replay divergence at call #2 (get_expenses): the arguments differ from the recording",
			`recorded: {"member_id":"eng-01","quarter":"Q3"}`,
			`actual:   {"member_id":"eng-01","quarter":"Q2"}`,
			`/quarter: "Q3" → "Q2"`,
		}},
		{"changed tool answer", []string{"--replay-file-is", answer}, []string{
			"replay divergence at call #2 (get_expenses): the arguments differ from the recording",
			`/member_id: "eng-01" → "eng-42"`,
		}},
		{"extra call", []string{edited("extra.js", "return over;", `await tools.get_budget_by_level({ level: "junior" }); return over;`)}, []string{
			"replay divergence at call #27 (get_budget_by_level): the script made a call the recording does not have (it has 26 calls)",
			`actual:   {"level":"junior"}`,
		}},
		{"missing call", []string{edited("missing.js", "const levels = [", "const levels = [].slice(0, 0) || [")}, []string{
			"replay divergence at call #22 (get_budget_by_level): the recording has a call the script did not make",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"run", "--replay", tape}
			if tc.args[0] == "--replay-file-is" {
				args = []string{"run", "--replay", tc.args[1]}
			} else {
				args = append(args, tc.args...)
			}
			code, _, stderr := ptcMain(t, args...)
			if code != exitDivergence {
				t.Fatalf("exit %d, want %d: %s", code, exitDivergence, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestDeterministicFlags(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rand.js")
	src := `return [Math.random(), Math.random(), Date.now(), Date.now(), new Date().toISOString()]`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := func(args ...string) []any {
		t.Helper()
		code, stdout, stderr := ptcMain(t, append([]string{"run", p}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var v []any
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b, c := out("--seed", "5"), out("--seed", "5"), out("--seed", "6")
	if a[0] != b[0] || a[1] != b[1] || a[0] == a[1] {
		t.Fatalf("same seed, different numbers: %v %v", a, b)
	}
	if a[0] == c[0] {
		t.Fatalf("different seeds, same numbers: %v %v", a, c)
	}
	if a[2] != 0.0 || a[3] != 1.0 || a[4] != "1970-01-01T00:00:00.002Z" {
		t.Fatalf("virtual clock: %v", a[2:])
	}
	if d := out("--deterministic"); d[2] != 0.0 {
		t.Fatalf("--deterministic clock: %v", d)
	}
	if real := out(); real[2].(float64) < 1e12 {
		t.Fatalf("without --deterministic the clock is real: %v", real)
	}
}

func TestReplayUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"v":2,"type":"request"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing cassette", []string{"run", "--replay", filepath.Join(dir, "nope.jsonl")}, "no such file"},
		{"bad cassette", []string{"run", "--replay", bad}, "line 1: unsupported cassette version"},
		{"with server", []string{"run", "--replay", bad, "--server", "127.0.0.1:1"}, "drop --server"},
		{"with record", []string{"run", "--replay", bad, "--record", filepath.Join(dir, "x")}, "cannot be combined"},
		{"with allow", []string{"run", "--replay", bad, "--allow", "x"}, "--allow does not apply"},
		{"record into a missing directory", []string{"run", expensesJS, "--record", filepath.Join(dir, "no", "such", "x.jsonl")}, "--record"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := ptcMain(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 1 and %q", code, stderr, tc.want)
			}
		})
	}
}

// serve starts a ptcd-like server with the given server tools on loopback.
func serve(t *testing.T, ts ...tools.Tool) string {
	t.Helper()
	reg := tools.NewRegistry()
	for _, tl := range ts {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	r, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	ptcv1.RegisterRunnerServiceServer(gs, server.New(r))
	done := make(chan struct{})
	// The server goroutine ends when gs.Stop closes the listener.
	go func() { _ = gs.Serve(lis); close(done) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return lis.Addr().String()
}

// Recording reads the trace, so server tools and client tools record the
// same way as in-process tools, and replay in-process.
func TestRecordOverServer(t *testing.T) {
	cases := []struct {
		name  string
		tools []tools.Tool
		args  []string
	}{
		{"server tools", demo.Tools(), nil},
		{"client tools", nil, []string{"--client-demo-tools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, tc.tools...)
			tape := filepath.Join(t.TempDir(), "remote.jsonl")
			args := append([]string{"run", expensesJS, "--server", addr, "--record", tape, "--input", `{"department":"sales"}`}, tc.args...)
			code, recOut, stderr := ptcMain(t, args...)
			if code != exitOK {
				t.Fatalf("record: exit %d: %s", code, stderr)
			}
			f, err := os.Open(tape)
			if err != nil {
				t.Fatal(err)
			}
			c, err := cassette.Read(f)
			f.Close()
			if err != nil || len(c.Request.Tools) != 3 || len(c.Calls) == 0 || string(c.Request.Input) != `{"department":"sales"}` {
				t.Fatalf("cassette: %v %+v", err, c)
			}
			code, repOut, stderr := ptcMain(t, "run", "--replay", tape)
			if code != exitOK || repOut != recOut {
				t.Fatalf("replay: exit %d, %q vs %q: %s", code, repOut, recOut, stderr)
			}
		})
	}
}
