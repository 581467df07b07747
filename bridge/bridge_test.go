package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/bridge"
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
		{"invalid args", "ok", `{"n":"1"}`, "", bridge.CodeInvalidArguments, bridge.NameArgumentError},
		{"args not json", "ok", `{`, "", bridge.CodeInvalidArguments, bridge.NameArgumentError},
		{"args too large", "ok", `{"s":"` + strings.Repeat("x", bridge.MaxArgumentBytes) + `"}`, "", bridge.CodeInvalidArguments, bridge.NameArgumentError},
		{"unknown", "nope", `{}`, "", bridge.CodeUnknownTool, bridge.NameToolError},
		{"output schema", "typed", `{}`, "", bridge.CodeInvalidOutput, bridge.NameToolError},
		{"trusted output", "trusted", `{}`, `1`, "", ""},
		{"output not json", "badjson", `{}`, "", bridge.CodeInvalidOutput, bridge.NameToolError},
		{"empty output is null", "empty", ``, `null`, "", ""},
		{"plain error", "fails", `{}`, "", bridge.CodeToolFailed, bridge.NameToolError},
		{"coded error", "coded", `{}`, "", "rate_limited", bridge.NameToolError},
		{"panic", "panics", `{}`, "", bridge.CodePanic, bridge.NameToolError},
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
	if !errors.As(err, &ce) || ce.Code != bridge.CodeCallLimit || ce.Kind().String() != "TOOL_CALL_LIMIT" || !d.LimitHit() || d.Calls() != 2 {
		t.Fatalf("err %v calls %d", err, d.Calls())
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
	if !errors.As(err, &ce) || ce.Code != bridge.CodeCancelled {
		t.Fatalf("queued call: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
