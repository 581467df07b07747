package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	ptcruntime "github.com/ptcrun/ptc/internal/runtime"
	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/tools"
)

// jsonconvTools return JSON text with unpaired surrogate escapes and
// out-of-range numbers, and errors and logs whose text is not UTF-8.
func jsonconvTools() []tools.Tool {
	text := func(s string) tools.Handler {
		return func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(s), nil }
	}
	return []tools.Tool{
		{Definition: tools.Definition{Name: "lone", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: text(`{"\ud800":1,"\udbff":2,"s":"a\udc00b"}`)},
		{Definition: tools.Definition{Name: "numbers", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: text(`[1e400,-1e400,-0,123456789012345678901234567890]`)},
		{Definition: tools.Definition{Name: "strict", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"level":{"type":"string"}},"required":["level"],"additionalProperties":false}`)},
			Handler: text(`"sent"`)},
		{Definition: tools.Definition{Name: "badtext", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
				return nil, tools.Errorf("bad_text", "not \xff UTF-8")
			}},
	}
}

// TestJSONConversionsEveryEngine: unpaired surrogates and number edge
// cases cross the worker frames (arguments, results, tool results, logs,
// errors) exactly as they stay in-process.
func TestJSONConversionsEveryEngine(t *testing.T) {
	codes := `const codes = (s) => Array.from({length: s.length}, (_, i) => s.charCodeAt(i));`
	cases := []struct{ name, src, want string }{
		{"result keys", `return {["\udc00x"]: 1, ["\ud800"]: "\udfff", b: 2}`, `{"\udc00x":1,"\ud800":"\udfff","b":2}`},
		{"tool arguments", codes + `const r = await tools.echo({["\ud800a"]: 1, ["\ud801"]: 2}); return Object.keys(r).map(codes)`, `[[55296,97],[55297]]`},
		{"tool arguments merged", `try { await tools.echo({["\ud800"]: 1, ["\ud801"]: 2}); return "sent" } catch (e) { return e.code }`, `"invalid_arguments"`},
		{"schema refuses", `try { await tools.strict({level: "x", ["\ud800"]: 1}); return "sent" } catch (e) { return e.code }`, `"invalid_arguments"`},
		{"tool result", codes + `const r = await tools.lone({}); return [Object.keys(r).map(codes), codes(r.s)]`, `[[[55296],[56319],[115]],[97,56320,98]]`},
		{"tool result numbers", `const r = await tools.numbers({}); return [r.map(String), Object.is(r[2], -0)]`, `[["Infinity","-Infinity","0","1.2345678901234568e+29"],true]`},
		{"JSON.parse", `return [String(JSON.parse("1e400")), JSON.parse('"\\ud800"').charCodeAt(0)]`, `["Infinity",55296]`},
		{"tool error text", `try { await tools.badtext({}) } catch (e) { return [e.code, e.message] }`, `["bad_text","not � UTF-8"]`},
		{"log", `console.log({["\ud800"]: 1}, "\ud800"); return 1`, `1`},
		{"BigInt", `try { BigInt.asUintN(2**53 - 1, -1n) } catch (e) { return [e.name, e instanceof RangeError] }`, `["RangeError",true]`},
	}
	engines := everyEngine(t)
	for _, c := range cases {
		for _, e := range engines {
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				job, _ := newJob(t, c.src, testLimits(), jsonconvTools()...)
				out := e.eng.Run(context.Background(), job)
				if out.Err != nil {
					t.Fatal(out.Err)
				}
				if string(out.Result) != c.want {
					t.Fatalf("got %s, want %s", out.Result, c.want)
				}
				entries, _ := job.Logs.Entries()
				for _, l := range entries {
					if !strings.HasPrefix(l.Message, `{"\ud800":1} `) {
						t.Fatalf("log %q lost its key", l.Message)
					}
				}
			})
		}
	}
}

// namedEngine is an engine a test runs the same script on.
type namedEngine struct {
	name string
	eng  ptcruntime.Engine
}

// everyEngine is plain JavaScript in this process, worker processes and
// the in-process pool, in that order.
func everyEngine(t *testing.T) []namedEngine {
	return []namedEngine{
		{"js", js.New()},
		{"worker", newPool(t, Config{})},
		{"inprocess", newPool(t, Config{Mode: ModeInProcess})},
	}
}
