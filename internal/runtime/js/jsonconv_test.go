package js_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/js"
	"github.com/ptcrun/ptc/tools"
)

// surrogateTools are the tools of TestJSONConversions: echo (any object
// back), strict (no keys but level), and tools returning JSON text with
// unpaired surrogate escapes and out-of-range numbers.
func surrogateTools(t *testing.T) []*tools.Compiled {
	t.Helper()
	text := func(s string) tools.Handler {
		return func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(s), nil }
	}
	defs := []tools.Tool{
		{Definition: tools.Definition{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }},
		{Definition: tools.Definition{Name: "strict", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"level":{"type":"string"}},"required":["level"],"additionalProperties":false}`)},
			Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }},
		{Definition: tools.Definition{Name: "lone"}, Handler: text(`{"\ud800":1,"\udbff":2,"s":"a\udc00b","p":"\ud83d\ude00"}`)},
		{Definition: tools.Definition{Name: "numbers"}, Handler: text(`[1e400,-1e400,-0,123456789012345678901234567890,1e-400]`)},
	}
	var out []*tools.Compiled
	for _, d := range defs {
		c, err := tools.Compile(d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// codes lists a string's UTF-16 code units, in JavaScript.
const codes = `const codes = (s) => Array.from({length: s.length}, (_, i) => s.charCodeAt(i));`

// TestJSONConversions: unpaired surrogates and number edge cases survive
// every conversion between script values and JSON exactly, or are
// refused; nothing is dropped or merged.
func TestJSONConversions(t *testing.T) {
	e := js.New()
	cases := []struct{ name, src, want string }{
		// JSON.stringify escapes unpaired surrogates in names as in values
		// (well-formed JSON.stringify) and never drops a property.
		{"stringify lone key", `return JSON.stringify({["\udc00x"]: 1, b: 2})`, `"{\"\\udc00x\":1,\"b\":2}"`},
		{"stringify two lone keys", `return JSON.stringify({["\ud800"]: 1, ["\ud801"]: 2})`, `"{\"\\ud800\":1,\"\\ud801\":2}"`},
		{"stringify nested lone key", `return JSON.stringify([{a: {["\udfff"]: [1]}}])`, `"[{\"a\":{\"\\udfff\":[1]}}]"`},
		{"stringify real U+FFFD key", `return JSON.stringify({"\ufffd": 1, ["\ud800"]: 2})`, `"{\"�\":1,\"\\ud800\":2}"`},
		{"stringify indented", `return JSON.stringify({["\ud800"]: 1}, null, 1)`, `"{\n \"\\ud800\": 1\n}"`},
		{"replacer sees the exact key", codes + `const seen = []; JSON.stringify({["\ud800"]: 1}, function (k, v) { seen.push(codes(k)); return v }); return seen`, `[[],[55296]]`},
		{"toJSON sees the exact key", codes + `let got; JSON.stringify({["\udc01"]: {toJSON(k) { got = codes(k); return 1 }}}); return got`, `[56321]`},
		{"property list with lone names", `return JSON.stringify({a: 1, ["\ud800"]: 2, ["\ud801"]: 3}, ["\ud800", "\ud801", "\ud800"])`, `"{\"\\ud800\":2,\"\\ud801\":3}"`},
		{"getter under a lone key", `return JSON.stringify({get ["\ud800"]() { return "got" }})`, `"{\"\\ud800\":\"got\"}"`},
		{"proxy with a lone key", `return JSON.stringify(new Proxy({["\ud800"]: 1}, {}))`, `"{\"\\ud800\":1}"`},
		// The result keeps every key, escaped.
		{"result lone key", `return {["\udc00x"]: 1, b: 2}`, `{"\udc00x":1,"b":2}`},
		{"result lone value", `return ["\ud800", "\udc00", "\ud83d\ude00"]`, `["\ud800","\udc00","😀"]`},
		// JSON.parse follows the specification where encoding/json cannot.
		{"parse lone escape", codes + `return codes(JSON.parse('"\\ud800"'))`, `[55296]`},
		{"parse lone escape then text", codes + `return codes(JSON.parse('"\\udc00x"'))`, `[56320,120]`},
		{"parse escaped pair", codes + `return codes(JSON.parse('"\\ud83d\\ude00"'))`, `[55357,56832]`},
		{"parse reversed pair", codes + `return codes(JSON.parse('"\\ude00\\ud83d"'))`, `[56832,55357]`},
		{"parse lone surrogate in the text", codes + `return codes(JSON.parse('"\ud800"'))`, `[55296]`},
		{"parse lone surrogate keys stay apart", codes + `return Object.keys(JSON.parse('{"\\ud800": 1, "\\ud801": 2, "\ud802": 3}')).map(codes)`, `[[55296],[55297],[55298]]`},
		{"parse round trip", `const s = JSON.stringify({["\ud800"]: "\udc00", k: ["\ud83d"]}); return JSON.stringify(JSON.parse(s)) === s`, `true`},
		{"parse numbers", `return JSON.parse("[1e400, -1e400, 1e-400, 123456789012345678901234567890]").map(String)`, `["Infinity","-Infinity","0","1.2345678901234568e+29"]`},
		{"parse negative zero", `return Object.is(JSON.parse("-0"), -0) && Object.is(JSON.parse("[-0.0]")[0], -0)`, `true`},
		{"parse huge exponent", `return JSON.parse("1" + "0".repeat(400)) === Infinity`, `true`},
		{"parse syntax error", `try { JSON.parse("[1,]") } catch (e) { return [e.name, e instanceof SyntaxError] }`, `["SyntaxError",true]`},
		{"parse reviver keeps lone keys", codes + `const ks = []; const v = JSON.parse('{"\\ud800": 1, "\\ud801": 2}', function (k, v) { ks.push(codes(k)); return typeof v === "number" ? v * 10 : v }); return [ks, JSON.stringify(v)]`,
			`[[[55296],[55297],[]],"{\"\\ud800\":10,\"\\ud801\":20}"]`},
		{"parse reviver on a frozen holder", `return JSON.stringify(JSON.parse('{"a": {"\\ud800": 1}}', function (k, v) { if (k === "\ud800") Object.freeze(this); return k === "\ud800" ? 2 : v }))`, `"{\"a\":{\"\\ud800\":1}}"`},
		{"parse reviver ignores Object.prototype accessors", `Object.defineProperty(Object.prototype, "get", {get() { throw new Error("read") }, configurable: true}); return JSON.stringify(JSON.parse('{"\\ud800": 1}', function (k, v) { return typeof v === "number" ? v + 1 : v }))`, `"{\"\\ud800\":2}"`},
		{"parse reviver deletes a lone key", `return JSON.stringify(JSON.parse('{"\\ud800": 1, "b": 2}', function (k, v) { return k === "\ud800" ? undefined : v }))`, `"{\"b\":2}"`},
		// Tool arguments keep every key, and a schema sees it.
		{"tool arguments keep a lone key", codes + `const r = await tools.echo({level: "senior", ["\ud800"]: 1}); return Object.keys(r).map(codes)`, `[[108,101,118,101,108],[55296]]`},
		{"tool arguments keep two lone keys apart", codes + `const r = await tools.echo({["\ud800a"]: 1, ["\ud800b"]: 2}); return Object.keys(r).map(codes)`, `[[55296,97],[55296,98]]`},
		{"tool arguments a schema cannot tell apart", `try { await tools.echo({["\ud800"]: 1, ["\ud801"]: 2}); return "sent" } catch (e) { return [e.name, e.code] }`, `["ToolArgumentError","invalid_arguments"]`},
		{"schema refuses a lone key", `try { await tools.strict({level: "senior", ["\ud800"]: 1}); return "sent" } catch (e) { return [e.name, e.code] }`, `["ToolArgumentError","invalid_arguments"]`},
		// Tool results reach the script exactly.
		{"tool result lone keys and values", codes + `const r = await tools.lone(); return [Object.keys(r).map(codes), codes(r.s), codes(r.p)]`,
			`[[[55296],[56319],[115],[112]],[97,56320,98],[55357,56832]]`},
		{"tool result numbers", `const r = await tools.numbers(); return [r.map(String), Object.is(r[2], -0)]`, `[["Infinity","-Infinity","0","1.2345678901234568e+29","0"],true]`},
		// console.log keeps the key (escaped) in an object it prints.
		{"console.log of a lone key", `console.log({["\ud800"]: 1}); return 1`, `1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, _ := run(t, e, c.src, runOpts{tools: surrogateTools(t)})
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			if string(out.Result) != c.want {
				t.Fatalf("got %s, want %s", out.Result, c.want)
			}
		})
	}
}

// TestLogKeepsLoneKeys: an object logged keeps its unpaired-surrogate
// keys, escaped as JSON.stringify escapes them.
func TestLogKeepsLoneKeys(t *testing.T) {
	out, _, logs := run(t, js.New(), `console.log({["\ud800"]: 1, b: 2}); return 1`, runOpts{})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	entries, _ := logs.Entries()
	if len(entries) != 1 || entries[0].Message != `{"\ud800":1,"b":2}` {
		t.Fatalf("logs %+q", entries)
	}
}

// TestJSONRoundTripMany: strings of awkward UTF-16 units (quotes,
// controls, U+FFFD, unpaired and paired surrogates, U+2028), as values
// and as names, come back from JSON.stringify and JSON.parse, and from a
// tool that returns its arguments, exactly; the result is valid JSON.
func TestJSONRoundTripMany(t *testing.T) {
	src := `let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const units = [0x41, 0x22, 0x5c, 0x0a, 0x00, 0x1f, 0x7f, 0xe9, 0xfffd, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xd83d, 0xde00, 0x2028];
const str = () => { let s = ""; const n = Math.floor(rnd() * 7); for (let j = 0; j < n; j++) s += String.fromCharCode(units[Math.floor(rnd() * units.length)]); return s };
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b) && Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k, i) => Object.keys(b)[i] === k && a[k] === b[k]);
let bad = [];
const all = [];
for (let i = 0; i < 2000; i++) {
  const s = str(), o = {[s]: s, [s + "x"]: str()};
  if (JSON.parse(JSON.stringify(s)) !== s || !same(o, JSON.parse(JSON.stringify(o)))) bad.push(i);
  if (i % 10 === 0) {
    const back = await tools.echo(o);
    if (!same(o, back)) bad.push("echo " + i);
    all.push(o);
  }
}
return {bad, all}`
	out, _, _ := run(t, js.New(), src, runOpts{tools: surrogateTools(t)})
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if !json.Valid(out.Result) {
		t.Fatalf("the result is not valid JSON: %.200s", out.Result)
	}
	var res struct {
		Bad []any `json:"bad"`
		All []any `json:"all"`
	}
	if err := json.Unmarshal(out.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Bad) > 0 || len(res.All) != 200 {
		t.Fatalf("%d round trips differ (%v), %d objects returned", len(res.Bad), res.Bad, len(res.All))
	}
}
