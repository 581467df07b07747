package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/wire"
	"github.com/ptcrun/ptc/tools"
)

// panicEngine stands in for an engine with a bug.
type panicEngine struct{}

func (panicEngine) Run(context.Context, *runtime.Job) *runtime.Outcome {
	panic("engine bug at /src/x.go:12")
}

func newExecutor(t *testing.T, cfg Config) *Executor {
	t.Helper()
	if cfg.Outcomes == nil {
		cfg.Outcomes = wire.Outcomes
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestInternalError(t *testing.T) {
	e := newExecutor(t, Config{})
	e.engines[core.LanguageWASM] = panicEngine{}
	res, err := e.Execute(context.Background(), core.Request{Script: core.Script{Language: core.LanguageWASM, Module: []byte("\x00asm")}}, limits.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != fault.KindInternal {
		t.Fatalf("error %v", res.Error)
	}
	if strings.Contains(res.ModelMessage, "x.go") || strings.Contains(res.Error.Message, "x.go") {
		t.Fatalf("internal details leak: %q / %q", res.ModelMessage, res.Error.Message)
	}
	// The executor keeps working.
	if res, err := e.Execute(context.Background(), core.Request{Script: core.Script{Source: "return 2"}}, limits.Limits{}); err != nil || string(res.Result) != "2" {
		t.Fatal(err, res)
	}
}

// TestExecutionIDContract: a caller-chosen execution id is at most 128
// bytes of ASCII letters, digits and "._:-"; anything else is refused.
func TestExecutionIDContract(t *testing.T) {
	e := newExecutor(t, Config{})
	cases := []struct {
		id string
		ok bool
	}{
		{"run-1", true},
		{"tenant.a:job_42-x", true},
		{strings.Repeat("a", MaxExecutionIDLength), true},
		{strings.Repeat("a", MaxExecutionIDLength+1), false},
		{"../../x", false},
		{"a/b", false},
		{"a b", false},
		{"naïve", false},
		{"tab\there", false},
		{"%2e%2e", false},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			res, err := e.Execute(context.Background(), core.Request{ExecutionID: tc.id, Script: core.Script{Source: "return 1"}}, limits.Limits{})
			if tc.ok {
				if err != nil || res.ExecutionID != tc.id {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Code != fault.CodeInvalidArgument || !strings.Contains(err.Message, "execution_id") {
				t.Fatalf("accepted or wrong error: %v", err)
			}
		})
	}
}

// TestValidatedAndClampedOnce: Prepare validates and resolves limits under
// the policy narrowed by the tenant's ceilings.
func TestValidatedAndClampedOnce(t *testing.T) {
	e := newExecutor(t, Config{})
	p, err := e.Prepare(core.Request{Script: core.Script{Source: "return 1"}, Limits: limits.Limits{MaxToolCalls: 500}},
		limits.Limits{MaxToolCalls: 10, MemoryBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if l := p.Limits(); l.MaxToolCalls != 10 || l.MemoryBytes != 1<<20 || l.Timeout != limits.Defaults().Timeout {
		t.Fatalf("limits %+v", l)
	}
	if _, err := e.Prepare(core.Request{Script: core.Script{Source: "return 1"}, Limits: limits.Limits{MaxLogBytes: -1}}, limits.Limits{}); err == nil ||
		err.Code != fault.CodeInvalidArgument || !strings.Contains(err.Message, "limits.max_log_bytes is negative") {
		t.Fatalf("negative limit: %v", err)
	}
}

// TestModuleDigestContract: module_sha256 is 64 lowercase hex digits;
// anything else (uppercase included) is a malformed request
// (INVALID_ARGUMENT), a well-formed digest the server does not hold asks
// for the bytes (FAILED_PRECONDITION), and a digest or module on a script
// that is not WASM is refused in every language.
func TestModuleDigestContract(t *testing.T) {
	e := newExecutor(t, Config{})
	cases := []struct {
		name, digest string
		code         fault.Code
	}{
		{"path", "../../etc/passwd", fault.CodeInvalidArgument},
		{"short", "abc123", fault.CodeInvalidArgument},
		{"not hex", strings.Repeat("g", 64), fault.CodeInvalidArgument},
		{"too long", strings.Repeat("a", 65), fault.CodeInvalidArgument},
		{"huge", strings.Repeat("z", 1<<20), fault.CodeInvalidArgument},
		{"unknown lowercase", strings.Repeat("ab", 32), fault.CodeFailedPrecondition},
		{"uppercase", strings.Repeat("AB", 32), fault.CodeInvalidArgument},
		{"mixed case", strings.Repeat("ab", 31) + "Ab", fault.CodeInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Prepare(core.Request{Script: core.Script{Language: core.LanguageWASM, ModuleSHA256: tc.digest}}, limits.Limits{})
			if err == nil || err.Code != tc.code || !strings.Contains(err.Message, "module_sha256") || len(err.Message) > 300 {
				t.Fatalf("error %v, want %v naming module_sha256", err, tc.code)
			}
		})
	}
	notWASM := []struct {
		name   string
		script core.Script
	}{
		{"javascript, malformed digest", core.Script{Language: core.LanguageJavaScript, Source: "return 1", ModuleSHA256: "zz"}},
		{"javascript, well-formed digest", core.Script{Language: core.LanguageJavaScript, Source: "return 1", ModuleSHA256: strings.Repeat("ab", 32)}},
		{"typescript, digest", core.Script{Language: core.LanguageTypeScript, Source: "return 1", ModuleSHA256: "zz"}},
		{"javascript, module", core.Script{Language: core.LanguageJavaScript, Source: "return 1", Module: []byte("\x00asm")}},
	}
	for _, tc := range notWASM {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Prepare(core.Request{Script: tc.script}, limits.Limits{})
			if err == nil || err.Code != fault.CodeInvalidArgument || !strings.Contains(err.Message, "LANGUAGE_WASM only") {
				t.Fatalf("error %v, want INVALID_ARGUMENT: for LANGUAGE_WASM only", err)
			}
		})
	}
}

// TestClockStartPresence: a deterministic request's clock starts where it
// says, the zero time (0001-01-01) included; only an unset start is the
// Unix epoch.
func TestClockStartPresence(t *testing.T) {
	e := newExecutor(t, Config{})
	cases := []struct {
		name string
		det  core.Determinism
		want string
	}{
		{"unset", core.Determinism{Deterministic: true}, "1970"},
		{"zero time set", core.Determinism{Deterministic: true, ClockStartSet: true}, "1"},
		{"2030", core.Determinism{Deterministic: true, ClockStart: time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC), ClockStartSet: true}, "2030"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Execute(context.Background(), core.Request{Script: core.Script{Source: "return new Date().getUTCFullYear()"}, Determinism: tc.det}, limits.Limits{})
			if err != nil || res.Error != nil || string(res.Result) != tc.want {
				t.Fatalf("result %s, %v %v; want %s", res.Result, err, res.Error, tc.want)
			}
		})
	}
}

// TestResumableClockStartsNow: a resumable execution without a clock start
// reads a virtual clock that starts when the execution starts, not at the
// Unix epoch; one given explicitly, the zero time included, is kept.
func TestResumableClockStartsNow(t *testing.T) {
	e := durableExecutor(t, 0)
	src := core.Script{Source: "return Date.now()"}
	before := time.Now().Truncate(time.Millisecond).UnixMilli()
	res, err := e.Execute(context.Background(), core.Request{Script: src, Resumable: true}, limits.Limits{})
	after := time.Now().UnixMilli()
	if err != nil || res.Error != nil {
		t.Fatal(err, res.Error)
	}
	var now int64
	if jerr := json.Unmarshal(res.Result, &now); jerr != nil || now < before || now > after {
		t.Fatalf("Date.now() %s, want between %d and %d", res.Result, before, after)
	}
	// Re-run from its continuation (nothing parked), the clock reads
	// what it read before the pause: the start travels with the state.
	rerun := durableExecutor(t, -1)
	paused, err := rerun.Execute(context.Background(), core.Request{Script: core.Script{Source: `
		const t0 = Date.now(); console.log(String(t0)); await tools.ask({}); return [t0, Date.now() - t0]`}, Resumable: true,
		ClientTools: []tools.Tool{askTool}}, limits.Limits{})
	if err != nil || paused.Error != nil || len(paused.Pending) != 1 {
		t.Fatal(err, paused)
	}
	out := resume(t, rerun, paused, core.Answer{CallID: paused.Pending[0].CallID, Output: json.RawMessage(`1`)})
	var times [2]int64
	if out.Error != nil || json.Unmarshal(out.Result, &times) != nil || len(paused.Logs) != 1 ||
		fmt.Sprint(times[0]) != paused.Logs[0].Message || times[1] < 0 || times[1] > 60_000 {
		t.Fatalf("re-run: %s %v", out.Result, out.Error)
	}
	res, err = e.Execute(context.Background(), core.Request{Script: core.Script{Source: "return new Date().getUTCFullYear()"}, Resumable: true,
		Determinism: core.Determinism{ClockStartSet: true}}, limits.Limits{})
	if err != nil || res.Error != nil || string(res.Result) != "1" {
		t.Fatalf("result %s, %v %v; want the zero time's year 1", res.Result, err, res.Error)
	}
}

// TestNotResumable: an executor without continuation keys refuses a
// resumable request and a resume, with their reason.
func TestNotResumable(t *testing.T) {
	e := newExecutor(t, Config{})
	_, ferr := e.Prepare(core.Request{Script: core.Script{Source: "return 1"}, Resumable: true}, limits.Limits{})
	if ferr == nil || ferr.Code != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonResumableUnsupported {
		t.Fatalf("prepare: %v", ferr)
	}
	_, ferr = e.PrepareResume(context.Background(), Resume{Continuation: "x"})
	if ferr == nil || ferr.Code != fault.CodeFailedPrecondition || ferr.Reason != fault.ReasonResumableUnsupported {
		t.Fatalf("resume: %v", ferr)
	}
}
