package jsonschema

// ptc: tests of what limit.go and the indexed queue add to v6.0.3.

import (
	"errors"
	"strings"
	"testing"
)

func compile(t *testing.T, schema string) *Schema {
	t.Helper()
	doc, err := UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler()
	if err := c.AddResource("mem:///s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func value(t *testing.T, doc string) any {
	t.Helper()
	v, err := UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidateWithin(t *testing.T) {
	// Two levels of anyOf over two $refs: 1 + 2 + 4 subschemas applied,
	// and the errors they make.
	s := compile(t, `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"type":"string"},{"type":"string"}]}},"$ref":"#/$defs/a"}`)
	closed := make(chan struct{})
	close(closed)
	for _, tc := range []struct {
		name string
		doc  string
		lim  Limit
		want func(error) bool
	}{
		{"matches", `"s"`, Limit{Steps: 100}, func(err error) bool { return err == nil }},
		{"refused", `1`, Limit{Steps: 1000}, func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve) && len(ve.Causes) > 0
		}},
		{"refused quickly", `1`, Limit{Steps: 1000, Quick: true}, func(err error) bool {
			var ve *ValidationError
			return errors.As(err, &ve)
		}},
		{"out of steps", `1`, Limit{Steps: 5}, func(err error) bool { return errors.Is(err, ErrLimit) }},
		{"large value costs more", `"` + strings.Repeat("x", 64*100) + `"`, Limit{Steps: 50}, func(err error) bool { return errors.Is(err, ErrLimit) }},
		{"stopped", `[` + strings.Repeat(`1,`, 2000) + `1]`, Limit{Steps: 1 << 30, Done: closed}, func(err error) bool { return errors.Is(err, ErrStopped) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "stopped" {
				s = compile(t, `{"items":{"type":"integer"}}`)
			}
			if err := s.ValidateWithin(value(t, tc.doc), tc.lim); !tc.want(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestNumbersPastRat: numbers big.Rat cannot hold, or takes seconds to,
// fail the numeric keywords with NumberRange; v6.0.3 went on with a nil
// *big.Rat and panicked.
func TestNumbersPastRat(t *testing.T) {
	for _, tc := range []struct{ schema, doc string }{
		{`{"minimum":0}`, `1e9999999`},
		{`{"exclusiveMaximum":0}`, `-1e-9999999`},
		{`{"multipleOf":2}`, `2` + strings.Repeat("0", 2000)},
		{`{"items":{"minimum":0}}`, `[1e1001]`},
	} {
		err := compile(t, tc.schema).ValidateWithin(value(t, tc.doc), Limit{Steps: 1000})
		if err == nil || !strings.Contains(err.Error(), "too large to check") {
			t.Errorf("%s against %.20s: %v", tc.schema, tc.doc, err)
		}
	}
	// Past 20 items, uniqueItems hashes the items.
	if err := compile(t, `{"uniqueItems":true}`).ValidateWithin(value(t, `[`+strings.Repeat(`1e9999999,`, 25)+`0]`), Limit{Steps: 1000}); err == nil {
		t.Error("duplicates accepted")
	}
	if !ExactNumber(value(t, `1e1000`)) || ExactNumber(value(t, `1e1001`)) {
		t.Error("ExactNumber's bound is not ±1000")
	}
}

// TestQueueIndex: subschemas reached more than once compile to one
// Schema, as with the linear queue.
func TestQueueIndex(t *testing.T) {
	s := compile(t, `{"$defs":{"x":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/x"}}}`)
	if s.Properties["a"].Ref != s.Properties["b"].Ref {
		t.Fatal("one $ref target compiled twice")
	}
	if err := s.ValidateWithin(value(t, `{"a":1,"b":"s"}`), Limit{Steps: 100}); err == nil {
		t.Fatal(`"b":"s" accepted`)
	}
}
