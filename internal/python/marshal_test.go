package python

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// rawTool returns the JSON text it is given as its argument t.
var rawTool = tools.Tool{Definition: tools.Definition{Name: "raw"}, Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) {
	var a struct{ T string }
	if err := json.Unmarshal(c.Arguments, &a); err != nil {
		return nil, err
	}
	return json.RawMessage(a.T), nil
}}

var conversionCases = []struct {
	name, json string
	// scanner is whether the result goes to Python as JSON text.
	scanner bool
}{
	{name: "scalars", json: `[null,true,false,0,-1,"",[],{}]`},
	{name: "int32 bounds", json: `[2147483647,-2147483648,2147483648,-2147483649]`},
	{name: "big ints", json: `[9223372036854775807,9223372036854775808,-9223372036854775809,123456789012345678901234567890,-1000000000000000000000000000000]`},
	{name: "int at the digit limit", json: strings.Repeat("9", maxIntDigits)},
	{name: "int over the digit limit", json: strings.Repeat("9", maxIntDigits+1), scanner: true},
	{name: "floats", json: `[1.0,-0.0,0.1,1e5,1E-5,2.5e+3,5e-324,1.7976931348623157e308,1e400,-1e400,1e-400]`},
	{name: "escapes", json: `"a\"b\\c\/d\b\f\n\r\t\u00e9\u0000"`},
	{name: "utf-8", json: `["é","日本","😀",""]`},
	{name: "surrogate pair", json: `"\ud83d\ude00"`},
	{name: "lone surrogates", json: `["\ud800","\udc00x","\ud800\u0041","x\udbff"]`},
	{name: "repeated keys and values", json: `[{"a":"travel","b":1},{"a":"travel","b":2},{"b":3,"a":"meals"}]`},
	{name: "long strings", json: `["` + strings.Repeat("x", 300) + `","` + strings.Repeat("é", 200) + `"]`},
	{name: "duplicate key keeps the last", json: `{"a":1,"a":2}`},
	{name: "nested", json: strings.Repeat("[", 100) + strings.Repeat("]", 100)},
	{name: "deeper than converted", json: strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), scanner: true},
	{name: "invalid UTF-8", json: "\"a\xffb\"", scanner: true},
}

// TestConversionFallback checks which results are converted to marshal
// data and which go to Python as JSON text.
func TestConversionFallback(t *testing.T) {
	for _, c := range conversionCases {
		t.Run(c.name, func(t *testing.T) {
			f := appendValueFrame(nil, 7, []byte(c.json))
			if got := int(f[4+2+1]) == tagJSON; got != c.scanner {
				t.Fatalf("as JSON text: %v, want %v", got, c.scanner)
			}
			if n := int(f[0]) | int(f[1])<<8 | int(f[2])<<16 | int(f[3])<<24; n != len(f)-4 {
				t.Fatalf("frame length %d, want %d", n, len(f)-4)
			}
		})
	}
}

// TestConversionMatchesJSON checks that a tool's result reaches the script
// as the value json.loads makes of it: same types, same repr.
func TestConversionMatchesJSON(t *testing.T) {
	const src = `import json
want = json.loads(input["t"])
got = await tools.raw(t=input["t"])
return [repr(got) == repr(want), repr(got)[:200], repr(want)[:200]]`
	for _, c := range conversionCases {
		if c.name == "invalid UTF-8" || c.name == "int over the digit limit" {
			continue // below: the script sees an error
		}
		t.Run(c.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"t": c.json})
			out, _ := run(t, src, string(in), limits.Limits{}, rawTool)
			if out.Err != nil {
				t.Fatal(out.Err)
			}
			var r []any
			if err := json.Unmarshal(out.Result, &r); err != nil || r[0] != true {
				t.Fatalf("got %s", out.Result)
			}
		})
	}
}

// TestConversionErrors checks that results Python's JSON refuses fail as
// they did before they were converted: an integer over the digit limit.
func TestConversionErrors(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"t": strings.Repeat("9", maxIntDigits+1)})
	out, _ := run(t, "return await tools.raw(t=input['t'])", string(in), limits.Limits{}, rawTool)
	if out.Err == nil || !strings.Contains(out.Err.Message, "ValueError") {
		t.Fatalf("got %v, want a ValueError", out.Err)
	}
}

// FuzzConversion converts arbitrary JSON: it never panics and the frame's
// length is its own.
func FuzzConversion(f *testing.F) {
	for _, c := range conversionCases {
		f.Add([]byte(c.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		fr := appendValueFrame(nil, 1, b)
		if n := int(fr[0]) | int(fr[1])<<8 | int(fr[2])<<16 | int(fr[3])<<24; n != len(fr)-4 {
			t.Fatalf("frame length %d, want %d", n, len(fr)-4)
		}
	})
}

// resultCases are tool results as tools send them: with whitespace, and
// not JSON at all.
var resultCases = []string{
	" [ 1 , {\"a\" : \"b\" } ]\n", "{\n\t\"k\": [true, false, null]\r\n}", "  0  ", "-0", "123456789012345678", "1234567890123456789",
	"-123456789012345678", "[-1.5e-3, 2E+2, 0.0]",
	"nul", "nulx", "tru", "[1,]", "{\"a\":1,}", "\"a\x01\"", "01", "1.", "-", "1e", "1e+", "[1 2]", "{\"a\" 1}", "{} {}", "\"\\x\"",
	"\"\\u12\"", "+1", ".5", "[", "{", "\"", "",
}

// TestResultFrame checks the conversion of results as tools send them:
// the frame of a JSON text is the frame of its compact form; text that
// is not JSON is refused.
func TestResultFrame(t *testing.T) {
	texts := slices.Clone(resultCases)
	for _, c := range conversionCases {
		texts = append(texts, c.json)
	}
	for _, text := range texts {
		checkResultFrame(t, []byte(text))
	}
}

func checkResultFrame(t *testing.T, b []byte) {
	t.Helper()
	fr, ok := appendResultFrame([]byte("prefix"), 1, b)
	if valid := json.Valid(b); ok != valid {
		t.Fatalf("%.60q: converted %v, but json.Valid says %v", b, ok, valid)
	}
	if !bytes.HasPrefix(fr, []byte("prefix")) {
		t.Fatalf("%.60q: the frame lost what it was appended to", b)
	}
	if !ok {
		if len(fr) != len("prefix") {
			t.Fatalf("%.60q: refused, but the frame grew", b)
		}
		return
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	if want := appendValueFrame([]byte("prefix"), 1, c.Bytes()); !bytes.Equal(fr, want) {
		t.Fatalf("%.60q: frame %x, want the compact text's %x", b, fr, want)
	}
}

// FuzzResultFrame is TestResultFrame on any text.
func FuzzResultFrame(f *testing.F) {
	for _, s := range resultCases {
		f.Add([]byte(s))
	}
	for _, c := range conversionCases {
		f.Add([]byte(c.json))
	}
	f.Fuzz(checkResultFrame)
}
