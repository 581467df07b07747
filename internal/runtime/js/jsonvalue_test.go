package js

import (
	"regexp"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// loneEscape is an unpaired surrogate as JSON.stringify escapes it.
var loneEscape = regexp.MustCompile(`\\ud[89a-f][0-9a-f]{2}`)

// sameAsJSONParse checks that decodeJSON and goja's JSON.parse agree on
// data (both fail, or both give values that stringify identically), but
// where goja departs from the specification: it turns unpaired surrogates
// into U+FFFD and refuses out-of-range numbers.
func sameAsJSONParse(t *testing.T, data string) {
	t.Helper()
	vm := goja.New()
	parse, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
	want, werr := parse(goja.Undefined(), vm.ToValue(data))
	got, gerr := decodeJSON(vm, nil, []byte(data), false, map[string]string{})
	if werr != nil && strings.Contains(werr.Error(), "cannot unmarshal number") && gerr == nil {
		// goja refuses out-of-range numbers; the spec (and decodeJSON)
		// gives ±Infinity.
		return
	}
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: JSON.parse err %v, decodeJSON err %v", data, werr, gerr)
	}
	if werr != nil {
		return
	}
	ws, _ := stringify(goja.Undefined(), want)
	gs, _ := stringify(goja.Undefined(), got)
	if ws.String() != loneEscape.ReplaceAllString(gs.String(), "\uFFFD") {
		t.Fatalf("%q: JSON.parse → %s, decodeJSON → %s", data, ws, gs)
	}
	// Types match too (Array.isArray, typeof).
	if goja.IsNull(want) != goja.IsNull(got) {
		t.Fatalf("%q: null mismatch", data)
	}
}

func TestDecodeJSON(t *testing.T) {
	cases := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.5`, `1e3`, `-1.25E-2`, `123456789012345678901234567890`, `1e400`, `-1e400`,
		`9007199254740993`, `""`, `"a"`, `"\u00e9\n\t\"\\\/"`, `"\ud83d\ude00"`, `"😀é"`, `[]`, `{}`, `[1,[2,[3]]]`,
		`{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, ` { "a" : 1 } `, `{"__proto__": {"x": 1}}`, `{"a":1,"a":2}`,
		`[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `-`, `"abc`, `{"a" 1}`, `[1 2]`, `tru`, `nul`, `"\x"`, "\"a\x01\"", `{"a":1}x`, ``, `   `,
		`"\ud800"`, `"\udc00x"`, "\"\xff\xfe\"",
	}
	for _, c := range cases {
		sameAsJSONParse(t, c)
	}
}

func TestDecodeJSONDepth(t *testing.T) {
	vm := goja.New()
	deep := strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)
	if _, err := decodeJSON(vm, nil, []byte(deep), false, nil); err == nil || !strings.Contains(err.Error(), "nesting") {
		t.Fatalf("deep nesting: %v", err)
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if _, err := decodeJSON(vm, nil, []byte(ok), false, nil); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, `"\u00e9"`, `-1.5e3`, `[null,true]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		sameAsJSONParse(t, s)
	})
}
