package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

// nestedAnyOf is a schema of depth levels, each an anyOf of two $refs to
// the next: a value that matches none takes 2^depth steps to refuse.
func nestedAnyOf(depth int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, depth)
	return b.String()
}

// wideAnyOf is {"items":{"anyOf":[n consts]}}: each item that matches no
// const is tried against all n.
func wideAnyOf(n int) string {
	consts := make([]string, n)
	for i := range consts {
		consts[i] = fmt.Sprintf(`{"const":%d}`, -i-1)
	}
	return `{"items":{"anyOf":[` + strings.Join(consts, ",") + `]}}`
}

// refChain is a schema whose $ref goes through n $defs, "0" to "n-1", to
// last, the schema "n".
func refChain(n int, last string) string {
	defs := make([]string, 0, n+1)
	for i := 0; i < n; i++ {
		defs = append(defs, fmt.Sprintf(`"%d":{"$ref":"#/$defs/%d"}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"%d":%s`, n, last))
	return `{"$ref":"#/$defs/0","$defs":{` + strings.Join(defs, ",") + `}}`
}

// nested is leaf inside depth arrays.
func nested(depth int, leaf string) string {
	return strings.Repeat("[", depth) + leaf + strings.Repeat("]", depth)
}

// patterns is n members "a{1000}<i>":{}, each a regular expression of
// about 1,000 instructions.
func patterns(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf(`"a{1000}%d":{}`, i)
	}
	return strings.Join(s, ",")
}

// names is a JSON array of n distinct strings.
func names(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf(`"p%d"`, i)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// numbers is a JSON array of n copies of the number text num.
func numbers(n int, num string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(num+",", n), ",") + "]"
}

// TestValidateBounded: a check costs at most its bound, whatever the
// schema and the document, and reports it as ErrCheckTooCostly; numbers
// the library cannot compare fail the numeric keywords instead of
// stopping the process. Without the bound, the first case takes 2^40
// steps and the second about 33 s and 2 GB.
func TestValidateBounded(t *testing.T) {
	for _, tc := range []struct {
		name, schema, doc string
		costly            bool   // the check runs out of steps
		violation         string // else a violation containing this ("" = matches)
	}{
		{name: "nested anyOf", schema: nestedAnyOf(40), doc: `1`, costly: true},
		{name: "nested anyOf matched", schema: nestedAnyOf(40), doc: `"s"`},
		{name: "wide anyOf", schema: wideAnyOf(4900), doc: numbers(2000, "1"), costly: true},
		{name: "wide anyOf small", schema: wideAnyOf(50), doc: numbers(20, "-7")},
		{name: "wide enum", schema: `{"items":{"enum":[` + strings.TrimSuffix(strings.Repeat("0,", 4000), ",") + `]}}`, doc: numbers(2000, "1"), costly: true},
		{name: "long required", schema: `{"items":{"required":` + names(4000) + `}}`, doc: numbers(2000, "{}"), costly: true},
		{name: "property names", schema: `{"propertyNames":{"$ref":"#/$defs/d0"},` + strings.Replace(strings.TrimPrefix(nestedAnyOf(40), `{"$ref":"#/$defs/d0",`), `"string"`, `"integer"`, 1), doc: `{"a":1}`, costly: true},
		{name: "long pattern, long string", schema: `{"pattern":"` + strings.Repeat("a", 4000) + `"}`, doc: `"` + strings.Repeat("b", 1<<20) + `"`, costly: true},
		// Keywords and shapes whose cost per step is not constant.
		{name: "deep document, long $ref chain", schema: refChain(4000, `{"items":{"$ref":"#/$defs/0"}}`),
			doc: nested(10000, `"`+strings.Repeat("x", 1<<20)+`"`), costly: true},
		{name: "deep document, an error at every level", schema: `{"type":"array","items":{"$ref":"#"}}`, doc: nested(10000, `1`), costly: true},
		{name: "pattern of a large program", schema: `{"pattern":"[a-z]{1000}"}`, doc: `"` + strings.Repeat(strings.Repeat("a", 999)+"0", 100) + `"`, costly: true},
		{name: "format regex in the document", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","items":{"format":"regex"}}`,
			doc: "[" + strings.TrimSuffix(strings.Repeat(`"`+strings.Repeat("a{1000}", 9)+`",`, 2000), ",") + "]", costly: true},
		{name: "$dynamicRef on a deep document", schema: `{"$dynamicAnchor":"n","type":"array","items":{"$dynamicRef":"#n"}}`, doc: nested(9990, `[]`), costly: true},
		{name: "$ref chain on many values", schema: `{"items":{"$ref":"#/$defs/0"},` + strings.TrimPrefix(refChain(4900, `{"type":"integer"}`), "{"),
			doc: numbers(50000, "1"), costly: true},
		{name: "uniqueItems many times over", schema: `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"uniqueItems":true},`, 4000), ",") + `]}`,
			doc: `[[` + strings.Repeat(`"x",`, 100000) + `1],[` + strings.Repeat(`"x",`, 100000) + `2]]`, costly: true},
		{name: "enum of long numbers", schema: `{"items":{"enum":[` + strings.TrimSuffix(strings.Repeat(strings.Repeat("9", 400)+"e-999,", 2000), ",") + `]}}`,
			doc: numbers(10, strings.Repeat("7", 999)), costly: true},
		{name: "deep document that matches", schema: `{"type":"array","items":{"$ref":"#"}}`, doc: nested(3000, ``)},
		{name: "spaces do not buy steps", schema: nestedAnyOf(30), doc: `1` + strings.Repeat(" ", 1<<20), costly: true},
		{name: "a long regular expression in the document", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","format":"regex"}`,
			doc: `"[` + strings.Repeat(`\\pL`, 2000) + `]"`, violation: "pL"},
		{name: "pattern quoted short", schema: `{"pattern":"^a"}`, doc: `"` + strings.Repeat("b", 1<<20) + `"`, violation: "bbbb"},
		{name: "wide anyOf refused", schema: wideAnyOf(50), doc: numbers(20, "1"), violation: "value must be"},
		{name: "exponent past the library", schema: `{"minimum":0}`, doc: `1e9999999`, violation: "too large to check"},
		{name: "negative exponent", schema: `{"maximum":0}`, doc: `1e-9999999`, violation: "too large to check"},
		{name: "long number", schema: `{"multipleOf":3}`, doc: "1" + strings.Repeat("0", 1<<20), violation: "too large to check"},
		{name: "long number as integer", schema: `{"type":"integer"}`, doc: "3" + strings.Repeat("0", 5000), violation: "want integer"},
		{name: "unique items", schema: `{"uniqueItems":true}`, doc: numbers(30, "1e9999999"), violation: "items at"},
		{name: "const", schema: `{"const":1e9999}`, doc: `1e9999`, violation: "too large"},
		{name: "number in range", schema: `{"minimum":0,"multipleOf":0.5}`, doc: `1e300`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tools.CompileSchema(json.RawMessage(tc.schema))
			if tc.name == "const" {
				// A schema's own numbers are held to the bounds at compile.
				if err == nil || !strings.Contains(err.Error(), tc.violation) {
					t.Fatalf("compile: %v, want an error containing %q", err, tc.violation)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			vs, err := s.Validate(json.RawMessage(tc.doc))
			switch {
			case tc.costly:
				if !errors.Is(err, tools.ErrCheckTooCostly) {
					t.Fatalf("got %v, %v; want ErrCheckTooCostly", vs, err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.violation == "" && len(vs) > 0:
				t.Fatalf("refused: %v", vs)
			case tc.violation != "" && (len(vs) == 0 || !strings.Contains(tools.FormatViolations(vs), tc.violation)):
				t.Fatalf("violations %.300q, want one containing %q", tools.FormatViolations(vs), tc.violation)
			}
			for _, v := range vs {
				// A violation quotes the value it is about, cut.
				if len(v.Message) > 1<<10 || len(v.Path) > 1<<10 {
					t.Fatalf("a violation of %d and %d bytes", len(v.Message), len(v.Path))
				}
			}
		})
	}
}

// TestValidateWithinBoundForLargeDocuments: the bound grows with the
// document, so that a large document that matches an ordinary schema is
// not refused: 512 KiB of objects, each one of ten object types.
func TestValidateWithinBoundForLargeDocuments(t *testing.T) {
	if raceEnabled {
		t.Skip("a check's time bound is wall-clock, and the race detector slows the check several times over")
	}
	var branches []string
	for i := 0; i < 10; i++ {
		branches = append(branches, fmt.Sprintf(`{"type":"object","required":["kind","id","tags"],"properties":{"kind":{"const":"k%d"},"id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":100},"tags":{"type":"array","items":{"type":"string"}}}}`, i))
	}
	s, err := tools.CompileSchema(json.RawMessage(`{"type":"array","items":{"anyOf":[` + strings.Join(branches, ",") + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	size := 0
	for i := 0; size < 512<<10; i++ {
		item := fmt.Sprintf(`{"kind":"k%d","id":%d,"name":"item %d","tags":["a","b"]}`, 9-i%3, i, i)
		items = append(items, item)
		size += len(item) + 1
	}
	doc := json.RawMessage("[" + strings.Join(items, ",") + "]")
	if vs, err := s.Validate(doc); err != nil || len(vs) > 0 {
		t.Fatalf("a %d-byte document of %d items: %v %v", len(doc), len(items), vs, err)
	}
	// One bad item among them is found and named.
	bad := append(json.RawMessage(nil), doc[:len(doc)-1]...)
	bad = append(bad, `,{"kind":"k3","id":-1,"tags":[]}]`...)
	vs, err := s.Validate(bad)
	if err != nil || len(vs) == 0 {
		t.Fatalf("bad item: %v %v", vs, err)
	}
	if p := fmt.Sprintf("/%d", len(items)); vs[0].Path != p && !strings.HasPrefix(vs[0].Path, p+"/") {
		t.Errorf("violation at %q, want under %q: %v", vs[0].Path, p, vs)
	}
}

// TestValidateContext: a check stops when its context ends.
func TestValidateContext(t *testing.T) {
	s, err := tools.CompileSchema(json.RawMessage(nestedAnyOf(40)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.ValidateContext(ctx, json.RawMessage(`1`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestCompileSchemaShape: a schema past the bounds that keep compiling
// short is refused before it is compiled.
func TestCompileSchemaShape(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"values", wideAnyOf(5000), "more than 10000 JSON values"},
		{"depth", strings.Repeat(`{"not":`, 64) + `{}` + strings.Repeat(`}`, 64), "nested more than 64 levels"},
		{"number", `{"maximum":1e1001}`, "too large"},
		{"one large regular expression", `{"pattern":"` + strings.Repeat("a{1000}", 11) + `"}`, "regular expression too large"},
		{"an index spelled otherwise", `{"allOf":[{}],"anyOf":[{"$ref":"#/allOf/00"}]}`, "not found"},
		{"a long member name", `{"properties":{"` + strings.Repeat("k", 2000) + `":{}}}`, "member name of 2000 bytes"},
		{"a long string", `{"$id":"http://x/` + strings.Repeat("p", 20000) + `"}`, "a string of"},
		{"regular expressions in all", `{"patternProperties":{` + patterns(60) + `}}`, "more than 50000 instructions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tools.CompileSchema(json.RawMessage(tc.schema)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// At the bounds, it compiles.
	if _, err := tools.CompileSchema(json.RawMessage(strings.Repeat(`{"not":`, 63) + `{}` + strings.Repeat(`}`, 63))); err != nil {
		t.Fatal(err)
	}
}
