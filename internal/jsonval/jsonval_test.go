package jsonval

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/jsonschema"
)

// same checks Decode against the jsonschema library's own decoder
// (encoding/json with UseNumber): both fail, or both give equal values;
// but where the library merges two property names into one, Decode
// refuses (TestDecodeRefusesMergedNames).
func same(t *testing.T, s string) {
	t.Helper()
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	got, gerr := Decode([]byte(s))
	if errors.Is(gerr, ErrMergedNames) && werr == nil {
		return
	}
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%q: library err %v, Decode err %v", s, werr, gerr)
	}
	if gerr != nil && !errors.Is(gerr, ErrSyntax) {
		t.Fatalf("%q: error %v does not wrap ErrSyntax", s, gerr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q: library %#v, Decode %#v", s, want, got)
	}
}

func TestDecode(t *testing.T) {
	for _, s := range []string{
		`null`, `true`, `false`, `0`, `-0`, `12.5e-3`, `123456789012345678901234567890`, `""`, `"a\u00e9\n"`, `"\ud83d\ude00"`,
		`"\ud800"`, `"\ud800\u0041"`, "\"\xff\"", `[]`, `{}`, `{"a":[1,{"b":null}],"c":"d"}`, ` [1, 2] `, `{"a":1,"a":2}`,
		`[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `"x`, `tru`, `[1]x`, ``, "\"\x01\"", `"\q"`,
	} {
		same(t, s)
	}
	if _, err := Decode([]byte(strings.Repeat("[", MaxDepth+1))); err == nil {
		t.Fatal("depth not bounded")
	}
}

// TestDecodeRefusesMergedNames: property names that U+FFFD would make one
// are refused, never merged; one such name, or names that stay apart,
// decode as encoding/json decodes them.
func TestDecodeRefusesMergedNames(t *testing.T) {
	cases := []struct {
		doc    string
		merged bool
	}{
		{`{"\ud800": 1, "\ud801": 2}`, true},
		{`{"a\udc00": 1, "a\udfff": 2}`, true},
		{`[{"x": {"\ud800": 1, "\ufffd": 2}}]`, true},
		{"{\"\xff\": 1, \"\xfe\": 2}", true},
		{`{"\ud800": 1}`, false},
		{`{"\ud800a": 1, "\ud800b": 2}`, false},
		{`{"a": 1, "a": 2}`, false},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.doc))
		if got := errors.Is(err, ErrMergedNames); got != c.merged {
			t.Errorf("%s: error %v, want merged %v", c.doc, err, c.merged)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("%s: error %v does not wrap ErrSyntax", c.doc, err)
		}
		if !c.merged {
			same(t, c.doc)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x"]}`, `"\u00e9"`, `-1e3`, `[null,true,false]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		same(t, s)
	})
}

func BenchmarkDecodeSmall(b *testing.B) {
	doc := []byte(`{"member_id":"eng-01","quarter":"Q3"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLibraryDecodeSmall(b *testing.B) {
	doc := []byte(`{"member_id":"eng-01","quarter":"Q3"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc)); err != nil {
			b.Fatal(err)
		}
	}
}
