package tools_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

func nop(context.Context, tools.Call) (json.RawMessage, error) { return nil, nil }

func TestValidateName(t *testing.T) {
	ok := []string{"a", "get_expenses", "github.search_issues", "a.b.c", "x-y", "$ok_inside"[1:]}
	bad := []string{"", "1abc", "a..b", ".a", "a.", "a b", "a/b", "$search", "a.$b", strings.Repeat("a", 200), "é"}
	for _, n := range ok {
		if err := tools.ValidateName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range bad {
		if err := tools.ValidateName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestCompileSchema(t *testing.T) {
	cases := []struct {
		name, schema, err string
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"boolean", `true`, ""},
		{"defs and ref", `{"$defs":{"n":{"type":"number"}},"$ref":"#/$defs/n"}`, ""},
		{"not json", `{`, "not valid JSON"},
		{"not an object", `[1]`, "object or boolean"},
		{"bad keyword value", `{"type": 5}`, "invalid schema"},
		{"external ref", `{"$ref":"https://example.com/s.json"}`, "not allowed"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "not allowed"},
		{"too large", `{"description":"` + strings.Repeat("x", tools.MaxSchemaBytes) + `"}`, "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tools.CompileSchema(json.RawMessage(tc.schema))
			if tc.err == "" && err != nil {
				t.Fatal(err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	s, err := tools.CompileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"enum":["x","y"]}},"required":["a"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc string
		paths     []string
		invalid   bool
	}{
		{"ok", `{"a":1,"b":"x"}`, nil, false},
		{"missing", `{}`, []string{""}, false},
		{"wrong type", `{"a":"1"}`, []string{"/a"}, false},
		{"extra and enum", `{"a":1,"b":"z","c":1}`, []string{"", "/b"}, false},
		{"big integer stays exact", `{"a":12345678901234567890}`, nil, false},
		{"not json", `{"a":`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vs, err := s.Validate(json.RawMessage(tc.doc))
			if tc.invalid {
				if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, v := range vs {
				paths = append(paths, v.Path)
				if v.Keyword == "" || v.Message == "" {
					t.Errorf("violation without keyword or message: %+v", v)
				}
			}
			sort.Strings(paths)
			if strings.Join(paths, ",") != strings.Join(tc.paths, ",") {
				t.Fatalf("paths %q, want %q (%v)", paths, tc.paths, vs)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	r := tools.NewRegistry()
	if err := r.Register(tools.Tool{Definition: tools.Definition{Name: "a.b"}, Handler: nop}); err != nil {
		t.Fatal(err)
	}
	errs := map[string]tools.Tool{
		"duplicate":    {Definition: tools.Definition{Name: "a.b"}, Handler: nop},
		"namespace":    {Definition: tools.Definition{Name: "a"}, Handler: nop},
		"under a tool": {Definition: tools.Definition{Name: "a.b.c"}, Handler: nop},
		"no handler":   {Definition: tools.Definition{Name: "z"}},
		"bad name":     {Definition: tools.Definition{Name: "1"}, Handler: nop},
		"bad input":    {Definition: tools.Definition{Name: "y", InputSchema: json.RawMessage(`{"type":1}`)}, Handler: nop},
		"bad output":   {Definition: tools.Definition{Name: "y", OutputSchema: json.RawMessage(`[`)}, Handler: nop},
	}
	for name, tl := range errs {
		if err := r.Register(tl); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if err := r.Register(tools.Tool{Definition: tools.Definition{Name: "a.c", Description: "d"}, Handler: nop}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "a.b,a.c" {
		t.Fatalf("names %s", got)
	}
	if d := r.Definitions(); len(d) != 2 || d[1].Description != "d" {
		t.Fatalf("definitions %+v", d)
	}
	if c, ok := r.Lookup("a.b"); !ok || c.Input == nil || c.Output != nil {
		t.Fatalf("lookup %+v", c)
	}
}

func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object"}`, `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, `{"pattern":"(a+)+$"}`, `true`} {
		f.Add(s, `{"a":1}`)
	}
	f.Fuzz(func(t *testing.T, schema, doc string) {
		s, err := tools.CompileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		_, _ = s.Validate(json.RawMessage(doc))
	})
}

func TestRegistrySetGroup(t *testing.T) {
	r := tools.NewRegistry()
	_ = r.Register(tools.Tool{Definition: tools.Definition{Name: "local"}, Handler: nop})
	mk := func(names ...string) []tools.Tool {
		var out []tools.Tool
		for _, n := range names {
			out = append(out, tools.Tool{Definition: tools.Definition{Name: n}, Handler: nop})
		}
		return out
	}
	if err := r.SetGroup("gh", mk("gh.a", "gh.b")); err != nil {
		t.Fatal(err)
	}
	if err := r.SetGroup("gh", mk("gh.b", "gh.c")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "gh.b,gh.c,local" {
		t.Fatalf("names %s", got)
	}
	for name, ts := range map[string][]tools.Tool{"collision": mk("local"), "namespace": mk("local.x"), "duplicate": mk("gh.z", "gh.z"), "bad": mk("1")} {
		if err := r.SetGroup("gh", ts); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if got := strings.Join(r.Names(), ","); got != "gh.b,gh.c,local" {
		t.Fatalf("failed SetGroup changed the registry: %s", got)
	}
	if err := r.SetGroup("gh", nil); err != nil || strings.Join(r.Names(), ",") != "local" {
		t.Fatal(err, r.Names())
	}
}

// TestCompileWith: CompileWith compiles a tool's schemas with the given
// function (the default input schema included), names the schema that
// failed, and checks the name and handler first.
func TestCompileWith(t *testing.T) {
	var got []string
	schema := func(raw json.RawMessage) (*tools.Schema, error) {
		got = append(got, string(raw))
		return tools.CompileSchema(raw)
	}
	c, err := tools.CompileWith(tools.Tool{Definition: tools.Definition{Name: "t", OutputSchema: json.RawMessage(`{"type":"array"}`)}, Handler: nop}, schema)
	if err != nil || c.Input == nil || c.Output == nil {
		t.Fatal(c, err)
	}
	if len(got) != 2 || got[0] != `{"type":"object"}` || got[1] != `{"type":"array"}` {
		t.Fatalf("compiled %q", got)
	}
	cases := []struct {
		tool tools.Tool
		want string
	}{
		{tools.Tool{Definition: tools.Definition{Name: "1bad"}, Handler: nop}, "name"},
		{tools.Tool{Definition: tools.Definition{Name: "t"}}, "no handler"},
		{tools.Tool{Definition: tools.Definition{Name: "t", InputSchema: json.RawMessage(`{"type":3}`)}, Handler: nop}, `tool "t": input schema`},
		{tools.Tool{Definition: tools.Definition{Name: "t", OutputSchema: json.RawMessage(`{"type":3}`)}, Handler: nop}, `tool "t": output schema`},
	}
	for _, tc := range cases {
		got = nil
		if _, err := tools.CompileWith(tc.tool, schema); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.tool.Definition, err, tc.want)
		}
	}
}
