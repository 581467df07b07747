package jsonval

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// same checks Decode against the jsonschema library's own decoder
// (encoding/json with UseNumber): both fail, or both give equal values.
func same(t *testing.T, s string) {
	t.Helper()
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	got, gerr := Decode([]byte(s))
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
