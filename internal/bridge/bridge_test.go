package bridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/tools"
)

func compile(t *testing.T, tl tools.Tool) *tools.Compiled {
	t.Helper()
	c, err := tools.Compile(tl)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCallOutcomes(t *testing.T) {
	ret := func(s string) tools.Handler {
		return func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(s), nil }
	}
	strict := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: 100, MaxConcurrent: 4, KeepResults: true, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "ok", InputSchema: strict}, Handler: ret(`{"x":1}`)}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "typed", OutputSchema: json.RawMessage(`{"type":"string"}`)}, Handler: ret(`1`)}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "trusted", OutputSchema: json.RawMessage(`{"type":"string"}`)}, Handler: ret(`1`), TrustOutput: true}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "badjson"}, Handler: ret(`{`)}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "empty"}, Handler: ret(``)}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "fails"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, errors.New("disk on fire")
		}}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "coded"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, tools.Errorf("rate_limited", "slow down")
		}}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "panics"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) { panic("x") }}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "key"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			return json.Marshal(c.IdempotencyKey)
		}}),
	}})
	cases := []struct {
		name, tool, args, out, code, errName string
	}{
		{"ok", "ok", `{"n":1}`, `{"x":1}`, "", ""},
		{"invalid args", "ok", `{"n":"1"}`, "", tools.CodeInvalidArguments, bridge.NameArgumentError},
		{"args not json", "ok", `{`, "", tools.CodeInvalidArguments, bridge.NameArgumentError},
		{"args too large", "ok", `{"s":"` + strings.Repeat("x", bridge.MaxArgumentBytes) + `"}`, "", tools.CodeInvalidArguments, bridge.NameArgumentError},
		{"unknown", "nope", `{}`, "", tools.CodeUnknownTool, bridge.NameToolError},
		{"output schema", "typed", `{}`, "", tools.CodeInvalidOutput, bridge.NameToolError},
		{"trusted output", "trusted", `{}`, `1`, "", ""},
		{"output not json", "badjson", `{}`, "", tools.CodeInvalidOutput, bridge.NameToolError},
		{"empty output is null", "empty", ``, `null`, "", ""},
		{"plain error", "fails", `{}`, "", tools.CodeToolFailed, bridge.NameToolError},
		{"coded error", "coded", `{}`, "", "rate_limited", bridge.NameToolError},
		{"panic", "panics", `{}`, "", tools.CodePanic, bridge.NameToolError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := d.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if tc.code == "" {
				if err != nil || string(out) != tc.out {
					t.Fatalf("out %s err %v", out, err)
				}
				return
			}
			var ce *bridge.CallError
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Name != tc.errName || ce.Tool != tc.tool {
				t.Fatalf("err %#v", err)
			}
		})
	}
	// The panic's value and stack never reach the script.
	_, err := d.Call(context.Background(), "panics", nil)
	if strings.Contains(err.Error(), "x\"") || strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("panic leaks: %v", err)
	}
	out, _ := d.Call(context.Background(), "key", nil)
	tr := d.Trace()
	if string(out) != `"ex/`+itoa(tr[len(tr)-1].Seq)+`"` {
		t.Fatalf("idempotency key %s", out)
	}
	// Unknown tools are not calls; everything else is, in order.
	for i, r := range tr {
		if r.Seq != int32(i+1) {
			t.Fatalf("seq %d at %d", r.Seq, i)
		}
	}
	if big := tr[3]; !strings.Contains(string(big.Arguments), `"$truncated":true`) || !json.Valid(big.Arguments) {
		t.Fatalf("large arguments traced as %.80s", big.Arguments)
	}
	if tr[0].Result == nil || !tr[0].OK || tr[0].ResultBytes != 7 {
		t.Fatalf("record %+v", tr[0])
	}
}

func itoa(n int32) string { b, _ := json.Marshal(n); return string(b) }

func TestCallBudget(t *testing.T) {
	c := compile(t, tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }})
	d := bridge.New(bridge.Config{MaxCalls: 2, Tools: []*tools.Compiled{c}})
	for i := 0; i < 2; i++ {
		if _, err := d.Call(context.Background(), "t", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := d.Call(context.Background(), "t", nil)
	var ce *bridge.CallError
	if !errors.As(err, &ce) || ce.Code != tools.CodeCallLimit || ce.Kind().String() != "TOOL_CALL_LIMIT" || ce.Limit != 2 || ce.Observed != 3 {
		t.Fatalf("err %+v", err)
	}
	// The refused call is counted and traced, as the contract says.
	if tr := d.Trace(); d.Calls() != 3 || len(tr) != 3 || tr[2].Seq != 3 || tr[2].ErrorCode != tools.CodeCallLimit || tr[2].OK {
		t.Fatalf("calls %d trace %+v", d.Calls(), tr)
	}
}

// TestRefusedCallsCountedAndBounded: every call counts against the budget
// and in Calls, unknown tools included; the trace keeps at most
// MaxRefusedRecords of the calls refused past the budget.
func TestRefusedCallsCountedAndBounded(t *testing.T) {
	c := compile(t, tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }})
	d := bridge.New(bridge.Config{MaxCalls: 2, Tools: []*tools.Compiled{c}})
	if _, err := d.Call(context.Background(), "nope", nil); err == nil {
		t.Fatal("unknown tool called")
	}
	if _, err := d.Call(context.Background(), "t", nil); err != nil {
		t.Fatal(err)
	}
	const flood = 1000
	for i := 0; i < flood; i++ {
		var ce *bridge.CallError
		if _, err := d.Call(context.Background(), "t", nil); !errors.As(err, &ce) || ce.Code != tools.CodeCallLimit {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	tr := d.Trace()
	if d.Calls() != 2+flood || len(tr) != 2+bridge.MaxRefusedRecords {
		t.Fatalf("calls %d, trace %d records", d.Calls(), len(tr))
	}
	if tr[0].ErrorCode != tools.CodeUnknownTool || tr[0].Seq != 1 || !tr[1].OK || tr[2].Seq != 3 {
		t.Fatalf("trace %+v", tr[:3])
	}
}

func TestCancelledWhileQueued(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	c := compile(t, tools.Tool{Definition: tools.Definition{Name: "t"}, Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		started <- struct{}{}
		<-release
		return json.RawMessage(`1`), nil
	}})
	d := bridge.New(bridge.Config{MaxConcurrent: 1, Tools: []*tools.Compiled{c}})
	first := d.Start(context.Background(), "t", nil)
	done := make(chan error)
	go func() { _, err := first(); done <- err }()
	<-started // the only slot is taken
	ctx, cancel := context.WithCancel(context.Background())
	second := d.Start(ctx, "t", nil)
	cancel()
	_, err := second()
	var ce *bridge.CallError
	if !errors.As(err, &ce) || ce.Code != tools.CodeCancelled {
		t.Fatalf("queued call: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStartNow checks the entry for a goroutine that must not wait for a
// concurrency slot: a call that can run at once holds its slot, one that
// cannot says so and waits for a slot when invoked, and refused calls run
// at once.
func TestStartNow(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 4)
	c := compile(t, tools.Tool{Definition: tools.Definition{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
			started <- struct{}{}
			<-release
			return json.RawMessage(`1`), nil
		}})
	d := bridge.New(bridge.Config{MaxConcurrent: 1, MaxCalls: 4, Tools: []*tools.Compiled{c}})
	first, now := d.StartNow(context.Background(), "t", nil)
	if !now {
		t.Fatal("the only slot was free, yet the call would wait")
	}
	// The first call holds the slot before it is invoked.
	second, now := d.StartNow(context.Background(), "t", nil)
	if now {
		t.Fatal("a second call claims to run at once with one slot taken")
	}
	if _, now := d.StartNow(context.Background(), "nope", nil); !now {
		t.Error("a refused call (unknown tool) would wait")
	}
	if _, now := d.StartNow(context.Background(), "t", json.RawMessage(`[]`)); !now {
		t.Error("a refused call (invalid arguments) would wait")
	}
	if _, now := d.StartNow(context.Background(), "t", nil); !now {
		t.Error("a refused call (over the budget) would wait")
	}
	done := make(chan error, 2)
	go func() { _, err := second(); done <- err }()
	go func() { _, err := first(); done <- err }()
	<-started
	select {
	case <-started:
		t.Fatal("two calls ran at once with one slot")
	default:
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if d.Calls() != 5 {
		t.Errorf("%d calls counted, want 5", d.Calls())
	}
	// A call that holds a slot and finds its context ended releases it.
	ctx, cancel := context.WithCancel(context.Background())
	d2 := bridge.New(bridge.Config{MaxConcurrent: 1, Tools: []*tools.Compiled{c}})
	held, now := d2.StartNow(ctx, "t", nil)
	cancel()
	var ce *bridge.CallError
	if _, err := held(); !now || !errors.As(err, &ce) || ce.Code != tools.CodeCancelled {
		t.Fatalf("cancelled held call: now %v, %v", now, err)
	}
	again, now := d2.StartNow(context.Background(), "t", nil)
	if !now {
		t.Error("the slot of a cancelled call was not released")
	}
	if _, err := again(); err != nil {
		t.Error(err)
	}
}

// TestAnyObjectArguments checks the arguments of a tool that declares no
// input schema (any object), whose check skips the schema validator:
// each gives what it gives with the same schema spelt otherwise, which
// the validator checks.
func TestAnyObjectArguments(t *testing.T) {
	echo := func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }
	d := bridge.New(bridge.Config{MaxCalls: 100, MaxConcurrent: 1, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "declared"}, Handler: echo}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "spelt", InputSchema: json.RawMessage(`{ "type": "object" }`)}, Handler: echo}),
	}})
	cases := []struct {
		name, args string
		// code is the error's code, "" for a call that succeeds.
		code string
	}{
		{"object", `{"a":[1,{"b":null}],"c":"\u00e9"}`, ""},
		{"empty object", `{}`, ""},
		{"no arguments", ``, ""},
		{"array", `[1,2]`, tools.CodeInvalidArguments},
		{"number", `5`, tools.CodeInvalidArguments},
		{"string", `"x"`, tools.CodeInvalidArguments},
		{"null", `null`, tools.CodeInvalidArguments},
		{"not JSON", `{"a":`, tools.CodeInvalidArguments},
		{"trailing text", `{} {}`, tools.CodeInvalidArguments},
		{"merged names", `{"\ud800":1,"\ud801":2}`, tools.CodeInvalidArguments},
		{"too deep", strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000), tools.CodeInvalidArguments},
		{"deep, no escapes", strings.Repeat(`{"a":`, 100) + `[1,2.5e3,true,false,null,"x"]` + strings.Repeat(`}`, 100), ""},
		{"control character in a string", "{\"a\":\"x\ny\"}", tools.CodeInvalidArguments},
		{"bad number", `{"a":01}`, tools.CodeInvalidArguments},
		{"trailing comma", `{"a":1,}`, tools.CodeInvalidArguments},
		{"unterminated string", `{"a":"x}`, tools.CodeInvalidArguments},
		{"duplicate names", `{"a":1,"a":2}`, ""},
		{"duplicate names with U+FFFD", "{\"\uFFFD\":1,\"\uFFFD\":2}", tools.CodeInvalidArguments},
		{"U+FFFD once", "{\"\uFFFD\":1}", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := d.Call(context.Background(), "declared", json.RawMessage(tc.args))
			ref, referr := d.Call(context.Background(), "spelt", json.RawMessage(tc.args))
			var ce, rce *bridge.CallError
			errors.As(err, &ce)
			errors.As(referr, &rce)
			switch {
			case tc.code == "" && (err != nil || string(out) != string(ref)):
				t.Fatalf("got %s %v, the validator %s %v", out, err, ref, referr)
			case tc.code != "" && (ce == nil || rce == nil || ce.Code != tc.code ||
				ce.Message != strings.ReplaceAll(rce.Message, "spelt", "declared")):
				t.Fatalf("got %#v, the validator %#v", err, referr)
			}
		})
	}
}

// TestArgumentsInAllBounded: an execution's calls pass at most
// MaxArgumentBytesInAll bytes of arguments in all; the call that would go
// past it is refused invalid_arguments without reaching its tool, and
// smaller calls that fit still run.
func TestArgumentsInAllBounded(t *testing.T) {
	big := json.RawMessage(`{"s":"` + strings.Repeat("z", bridge.MaxArgumentBytes-1024) + `"}`)
	fit := int(bridge.MaxArgumentBytesInAll / len(big))
	runs := 0
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: int32(fit + 3), MaxConcurrent: 1, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "put"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			runs++
			return json.RawMessage(`1`), nil
		}}),
	}})
	for i := 0; i < fit; i++ {
		if _, err := d.Call(context.Background(), "put", big); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := d.Call(context.Background(), "put", big)
	var ce *bridge.CallError
	if !errors.As(err, &ce) || ce.Code != tools.CodeInvalidArguments || !strings.Contains(ce.Message, "in all") || runs != fit {
		t.Fatalf("past the bound: %v (the tool ran %d times, want %d)", err, runs, fit)
	}
	if _, err := d.Call(context.Background(), "put", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("a small call that fits: %v", err)
	}
	// The trace's stubs hash MaxArgumentBytesInAll at most: past it a
	// stub gives the size alone.
	tr := d.Trace()
	if !strings.Contains(string(tr[0].Arguments), `"sha256"`) || string(tr[fit].Arguments) != fmt.Sprintf(`{"$truncated":true,"bytes":%d}`, len(big)) {
		t.Fatalf("stubs: first %s, past the bound %s", tr[0].Arguments, tr[fit].Arguments)
	}
}

// TestTracedArgumentsBounded: a trace keeps call arguments up to
// MaxTracedArgumentsBytes in all; past it every call's arguments, small
// ones too, are kept as their stub, and the tool still gets them whole.
func TestTracedArgumentsBounded(t *testing.T) {
	args := json.RawMessage(`{"s":"` + strings.Repeat("y", bridge.MaxTracedArgumentBytes-8) + `"}`)
	fit := int(bridge.MaxTracedArgumentsBytes / len(args))
	var got int
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: int32(fit + 2), MaxConcurrent: 1, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "echo"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
			got = len(c.Arguments)
			return json.RawMessage(`1`), nil
		}}),
	}})
	small := json.RawMessage(`{}`)
	for i := 0; i < fit+2; i++ {
		a := args
		if i == fit+1 {
			a = small
		}
		if _, err := d.Call(context.Background(), "echo", a); err != nil || got != len(a) {
			t.Fatalf("call %d: %v, the tool got %d bytes", i+1, err, got)
		}
	}
	tr := d.Trace()
	stub := func(b json.RawMessage) string {
		sum := sha256.Sum256(b)
		return fmt.Sprintf(`{"$truncated":true,"bytes":%d,"sha256":%q}`, len(b), hex.EncodeToString(sum[:]))
	}
	if string(tr[fit-1].Arguments) != string(args) {
		t.Fatalf("record %d (within the bound) keeps %d bytes", fit, len(tr[fit-1].Arguments))
	}
	if string(tr[fit].Arguments) != stub(args) || string(tr[fit+1].Arguments) != stub(small) {
		t.Fatalf("past the bound: %s, %s", tr[fit].Arguments, tr[fit+1].Arguments)
	}
}

// TestKeptResultsBounded: a trace keeps tool results up to
// MaxKeptResultBytes in all; a result past that is kept as its stub (size
// and SHA-256), and the script still gets it whole.
func TestKeptResultsBounded(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", bridge.MaxKeptResultBytes/2-12) + `"`)
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: 10, MaxConcurrent: 1, KeepResults: true, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "big"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return big, nil }}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "small"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`1`), nil }}),
	}})
	for _, name := range []string{"big", "big", "big", "small"} {
		if out, err := d.Call(context.Background(), name, json.RawMessage(`{}`)); err != nil || len(out) == 0 || name == "big" && len(out) != len(big) {
			t.Fatalf("%s: %d bytes, %v", name, len(out), err)
		}
	}
	tr := d.Trace()
	sum := sha256.Sum256(big)
	stub := fmt.Sprintf(`{"$truncated":true,"bytes":%d,"sha256":%q}`, len(big), hex.EncodeToString(sum[:]))
	for i, want := range []string{string(big), string(big), stub, "1"} {
		if string(tr[i].Result) != want {
			t.Fatalf("record %d keeps %d bytes, want %d", i+1, len(tr[i].Result), len(want))
		}
		if tr[i].ResultBytes == 0 || i < 3 && tr[i].ResultBytes != int64(len(big)) {
			t.Fatalf("record %d: result bytes %d", i+1, tr[i].ResultBytes)
		}
	}
}
