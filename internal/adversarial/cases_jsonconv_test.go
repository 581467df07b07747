package adversarial

import (
	"fmt"
	"strings"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// famJSONConv: unpaired surrogates and number edge cases through every
// conversion between script values and JSON (JSON.stringify, JSON.parse,
// the input, the result, tool arguments before their schema, logs, the
// result schema), and Go's error text kept out of scripts and messages.
const famJSONConv family = "jsonconv"

// goText are fragments of Go's own error texts (the runtime's and
// encoding/json's).
var goText = []string{"runtime error", "makeslice", "growslice", "out of range", "cannot unmarshal", "Go value", "json: ", "goroutine", "panic"}

// noGoText: neither the result, the error nor the model message shows
// Go's error text.
func noGoText(r *ptcv1.ExecuteResponse) error {
	for _, s := range []string{r.GetResultJson(), r.GetError().GetMessage(), r.GetModelMessage()} {
		for _, w := range goText {
			if strings.Contains(s, w) {
				return fmt.Errorf("GO ERROR TEXT VISIBLE (%q): %s", w, clip(s, 300))
			}
		}
	}
	return nil
}

// logHas: a log entry holds s.
func logHas(s string) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		for _, e := range r.GetLogs() {
			if strings.Contains(e.GetMessage(), s) {
				return nil
			}
		}
		return fmt.Errorf("no log entry holds %q: %v", s, r.GetLogs())
	}
}

func jsonconvCases() []tcase {
	const codes = `const codes = (s) => Array.from({length: s.length}, (_, i) => s.charCodeAt(i));`
	t := func(name, src string, w want, fast bool, opts ...opt) tcase {
		return tcase{name: name, family: famJSONConv, fast: fast, bound: 20 * time.Second,
			req: jsReq(src, append([]opt{timeout(10 * time.Second), cpu(10 * time.Second), memory(256 * MiB)}, opts...)...), want: w.and(noGoText)}
	}
	return []tcase{
		t("jsonconv-stringify-lone-key", `return JSON.stringify({["\udc00x"]: 1, b: 2})`, succeeds(`"{\"\\udc00x\":1,\"b\":2}"`), true),
		t("jsonconv-stringify-lone-keys-apart", `return JSON.stringify({["\ud800"]: 1, ["\ud801"]: 2}, null, 0)`, succeeds(`"{\"\\ud800\":1,\"\\ud801\":2}"`), false),
		t("jsonconv-stringify-replacer-list", `return JSON.stringify({a: 1, ["\ud800"]: 2}, ["\ud800"])`, succeeds(`"{\"\\ud800\":2}"`), false),
		t("jsonconv-result-lone-keys", `return {["\udc00x"]: 1, ["\ud800"]: "\udfff", b: [ "\ud83d\ude00" ]}`, succeeds(`{"\udc00x":1,"\ud800":"\udfff","b":["😀"]}`), true),
		t("jsonconv-parse-numbers", `return JSON.parse("[1e400, -1e400, -0, 123456789012345678901234567890, 1e-400]").map((x) => Object.is(x, -0) ? "-0" : String(x))`,
			succeeds(`["Infinity","-Infinity","-0","1.2345678901234568e+29","0"]`), true),
		t("jsonconv-parse-lone-escapes", codes+`const v = JSON.parse('{"\\ud800": "\\udc00", "\\ud801": 1}'); return [Object.keys(v).map(codes), codes(v["\ud800"])]`,
			succeeds(`[[[55296],[55297]],[56320]]`), false),
		t("jsonconv-parse-round-trip", `const s = JSON.stringify({["\ud800"]: "\udc00", k: ["\ud83d"]}); return JSON.stringify(JSON.parse(s)) === s`, succeeds(`true`), false),
		t("jsonconv-parse-syntax-error", `try { JSON.parse("[1e400") } catch (e) { return [e.name, e instanceof SyntaxError, e.message] }`,
			succeeds(`["SyntaxError",true,"JSON.parse: invalid JSON at offset 6: unexpected end in array"]`), false),
		t("jsonconv-input-lone-escapes", codes+`return [Object.keys(input).map(codes), codes(input["\ud800"]), String(input.n)]`,
			succeeds(`[[[55296],[110]],[56320],"Infinity"]`), false, input(`{"\ud800": "\udc00", "n": 1e400}`)),
		t("jsonconv-tool-args-forbidden-lone-key", `try { await tools.get_budget_by_level({level: "senior", ["\ud800"]: 1}); return "sent" } catch (e) { return [e.name, e.code] }`,
			succeeds(`["ToolArgumentError","invalid_arguments"]`).and(noToolCalls), true),
		t("jsonconv-tool-args-merged-names", `try { await tools.get_team_members({department: "sales", ["\ud800"]: 1, ["\ud801"]: 2}); return "sent" } catch (e) { return [e.name, e.code] }`,
			succeeds(`["ToolArgumentError","invalid_arguments"]`).and(noToolCalls), false),
		t("jsonconv-result-schema-merged-names", `return {["\ud800"]: 1, ["\ud801"]: 2}`, fails(SchemaViolation), false, schema(`{"type":"object","maxProperties":1}`)),
		t("jsonconv-log-lone-key", `console.log({["\ud800"]: 1, b: 2}); return 1`, succeeds(`1`).and(logHas(`{"\ud800":1,"b":2}`)), false),
		t("jsonconv-bigint-huge-width-caught", `try { BigInt.asUintN(2 ** 53 - 1, -1n); return "built" } catch (e) { return [e.name, e instanceof RangeError] }`,
			succeeds(`["RangeError",true]`), true),
		t("jsonconv-bigint-huge-width-uncaught", `return BigInt.asUintN(2 ** 53 - 1, -1n)`, fails(ScriptError), false),
		{name: "jsonconv-typescript-lone-key", family: famJSONConv, bound: 20 * time.Second,
			req:  tsReq(`const k: string = "\ud800"; return JSON.stringify({[k]: 1})`, timeout(10*time.Second), cpu(10*time.Second)),
			want: succeeds(`"{\"\\ud800\":1}"`).and(noGoText)},
	}
}
