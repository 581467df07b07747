package jsonval

import (
	"errors"
	"strings"
	"testing"
)

// kinds scans text to its end and returns the kinds of its tokens, or the
// first error.
func kinds(text string, maxDepth int) ([]Kind, error) {
	s := NewScanner([]byte(text), maxDepth)
	var ks []Kind
	for {
		t, err := s.Next()
		if err != nil {
			return ks, err
		}
		ks = append(ks, t.Kind)
		if t.Kind == End {
			return ks, nil
		}
	}
}

func TestScannerTokens(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []Kind
	}{
		{`1`, []Kind{Number, End}},
		{` "a" `, []Kind{String, End}},
		{`[]`, []Kind{BeginArray, EndArray, End}},
		{`{}`, []Kind{BeginObject, EndObject, End}},
		{`{"a":[true,false,null],"b":{}}`, []Kind{BeginObject, Key, BeginArray, True, False, Null, EndArray, Key, BeginObject, EndObject, EndObject, End}},
		{`[ 1 , "x" , [ ] ]`, []Kind{BeginArray, Number, String, BeginArray, EndArray, EndArray, End}},
	} {
		got, err := kinds(tc.text, 10)
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%s: got %v, %v; want %v", tc.text, got, err, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: got %v, want %v", tc.text, got, tc.want)
			}
		}
	}
}

func TestScannerErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{``, "unexpected end"},
		{`[1,]`, "unexpected character ']'"},
		{`[1 2]`, "expected ',' or ']'"},
		{`{"a":1 "b"}`, "expected ',' or '}'"},
		{`{"a" 1}`, "expected ':'"},
		{`{1:1}`, "expected a property name"},
		{`{"a":1,}`, "expected a property name"},
		{`[1`, "unexpected end in array"},
		{`{"a":1`, "unexpected end in object"},
		{`"abc`, "unterminated string"},
		{"\"a\x01\"", "control character in string"},
		{`tru`, "invalid literal"},
		{`1 2`, "unexpected data after the value"},
		{`[}`, "unexpected character '}'"},
		{`{]`, "expected a property name"},
	} {
		_, err := kinds(tc.text, 10)
		if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one wrapping ErrSyntax saying %q", tc.text, err, tc.want)
		}
	}
}

// TestScannerDeepMixedNesting crosses the 64 levels kept inline, with
// objects and arrays alternating, so that each close is checked against
// the container it closes.
func TestScannerDeepMixedNesting(t *testing.T) {
	const depth = 200
	var open strings.Builder
	closes := make([]byte, depth)
	for i := 0; i < depth; i++ {
		if i%3 == 0 {
			open.WriteString(`{"k":`)
			closes[depth-1-i] = '}'
		} else {
			open.WriteString("[")
			closes[depth-1-i] = ']'
		}
	}
	text := open.String() + "1" + string(closes)
	if _, err := kinds(text, depth); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if _, err := kinds(text, depth-1); !errors.Is(err, ErrTooDeep) {
		t.Errorf("past the limit: %v, want ErrTooDeep", err)
	}
	wrong := strings.Replace(text, "]}", "}}", 1)
	if _, err := kinds(wrong, depth); !errors.Is(err, ErrSyntax) {
		t.Errorf("a wrong close deep down: %v, want ErrSyntax", err)
	}
}
