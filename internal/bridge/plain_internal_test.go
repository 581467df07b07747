package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ptcrun/ptc/internal/jsonval"
	"github.com/ptcrun/ptc/tools"
)

// decodesToObject is the check plainObject stands in for.
func decodesToObject(b []byte) bool {
	v, err := jsonval.Decode(b)
	if err != nil {
		return false
	}
	_, ok := v.(map[string]any)
	return ok
}

// TestPlainObject checks that plainObject never accepts what
// jsonval.Decode refuses or decodes to something other than an object,
// and that it shows every object sent without escapes or U+FFFD.
func TestPlainObject(t *testing.T) {
	cases := []struct {
		name, text string
		plain      bool
	}{
		{"small object", `{"i":1}`, true},
		{"empty", `{}`, true},
		{"spaces", " { \"a\" : [ 1 , { } ] } \n", true},
		{"nested", strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70), true},
		{"too deep", strings.Repeat(`{"a":`, jsonval.MaxDepth+1) + `1` + strings.Repeat(`}`, jsonval.MaxDepth+1), false},
		{"array", `[1]`, false},
		{"number", `1`, false},
		{"empty text", ``, false},
		{"trailing data", `{}x`, false},
		{"two values", `{}{}`, false},
		{"missing colon", `{"a" 1}`, false},
		{"control character", "{\"a\":\"\x01\"}", false},
		{"bad literal", `{"a":tru}`, false},
		{"escape", `{"a":"\n"}`, false},
		{"U+FFFD", "{\"\uFFFD\":1}", false},
		{"unclosed", `{"a":1`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := plainObject([]byte(tc.text))
			if got != tc.plain {
				t.Fatalf("plainObject(%.40q) = %v, want %v", tc.text, got, tc.plain)
			}
			if got && !decodesToObject([]byte(tc.text)) {
				t.Fatalf("plainObject accepts %.40q, which Decode refuses", tc.text)
			}
		})
	}
}

// FuzzPlainObject checks plainObject against jsonval.Decode on any valid
// UTF-8 text (checkArgs refuses the rest first): it accepts only what
// Decode decodes to an object, and accepts every such text without a
// backslash or U+FFFD.
func FuzzPlainObject(f *testing.F) {
	for _, s := range []string{`{"i":1}`, `{}`, `[1]`, `{"a":{"b":[1,"x",null]}}`, `{"a":1,}`, "{\"\uFFFD\":1}", `{"a":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		got, want := plainObject(b), decodesToObject(b)
		if got && !want {
			t.Fatalf("plainObject accepts %q, which Decode does not decode to an object", b)
		}
		if want && !got && !strings.ContainsAny(string(b), "\\\uFFFD") {
			t.Fatalf("plainObject does not show %q, an object without escapes", b)
		}
	})
}

// BenchmarkCheckArgsAnyObject is the check of a small call's arguments
// for a tool that declares no input schema.
func BenchmarkCheckArgsAnyObject(b *testing.B) {
	c, err := tools.Compile(tools.Tool{Definition: tools.Definition{Name: "echo"},
		Handler: func(_ context.Context, c tools.Call) (json.RawMessage, error) { return c.Arguments, nil }})
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"i":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, ce := checkArgs(c, args); ce != nil {
			b.Fatal(ce)
		}
	}
}
