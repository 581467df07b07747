package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/tools"
)

// TestSurrogateNames: the schema sees every property the tool gets. A
// property name with an unpaired surrogate escape is checked as a name of
// its own (and refused where the schema forbids extra names); names that
// the validator's U+FFFD would make one are refused, never merged.
func TestSurrogateNames(t *testing.T) {
	ret := func(s string) tools.Handler {
		return func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(s), nil }
	}
	echo := func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: 100, MaxConcurrent: 4, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "one", InputSchema: json.RawMessage(`{"type":"object","maxProperties":1}`)}, Handler: echo}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "strict", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"level":{"type":"string"}},"additionalProperties":false}`)}, Handler: echo}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "out", OutputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: ret(`{"\ud800":1,"\ud801":2}`)}),
	}})
	cases := []struct {
		name, tool, args, out, code, msg string
	}{
		{"one lone name", "one", `{"\ud800":1}`, `{"\ud800":1}`, "", ""},
		{"names merged by U+FFFD", "one", `{"\ud800":1,"\ud801":2}`, "", tools.CodeInvalidArguments, "differ only in unpaired surrogates"},
		{"names with invalid UTF-8", "one", "{\"\xff\":1,\"\xfe\":2}", "", tools.CodeInvalidArguments, "not valid UTF-8"},
		{"lone name forbidden", "strict", `{"level":"senior","\ud800":1}`, "", tools.CodeInvalidArguments, "additional properties"},
		{"output names merged", "out", `{}`, "", tools.CodeInvalidOutput, "differ only in unpaired surrogates"},
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
			if !errors.As(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Message, tc.msg) {
				t.Fatalf("out %s err %#v", out, err)
			}
		})
	}
}
