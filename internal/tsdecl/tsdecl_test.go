package tsdecl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

func def(name, in, out string) tools.Definition {
	d := tools.Definition{Name: name}
	if in != "" {
		d.InputSchema = json.RawMessage(in)
	}
	if out != "" {
		d.OutputSchema = json.RawMessage(out)
	}
	return d
}

// nested returns a schema of n nested arrays.
func nested(n int) string {
	return strings.Repeat(`{"type":"array","items":`, n) + `{"type":"string"}` + strings.Repeat("}", n)
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name    string
		defs    []tools.Definition
		opts    Options
		wantErr error
		wantMsg string
	}{
		{"empty name", []tools.Definition{def("", "", "")}, Options{}, ErrInvalidTool, "tool name is empty"},
		{"invalid name", []tools.Definition{def("a b", "", "")}, Options{}, ErrInvalidTool, `tool name "a b" is invalid`},
		{"duplicate", []tools.Definition{def("a", "", ""), def("a", "", "")}, Options{}, ErrInvalidTool, `tool "a" is listed twice`},
		{"namespace clash", []tools.Definition{def("a.b.c", "", ""), def("a.b", "", "")}, Options{}, ErrInvalidTool, `tool "a.b.c" clashes with tool "a.b"`},
		{"not json", []tools.Definition{def("a", `{"type":`, "")}, Options{}, ErrInvalidSchema, `tool "a": input schema is not valid JSON`},
		{"trailing data", []tools.Definition{def("a", `{} {}`, "")}, Options{}, ErrInvalidSchema, "has data after the JSON value"},
		{"null schema", []tools.Definition{def("a", `null`, "")}, Options{}, ErrInvalidSchema, "must be a JSON object or a boolean, not null"},
		{"number property schema", []tools.Definition{def("a", `{"properties":{"x":3}}`, "")}, Options{}, ErrInvalidSchema, `at "/properties/x": a schema must be a JSON object or a boolean, not a number`},
		{"unknown type", []tools.Definition{def("a", "", `{"type":"date"}`)}, Options{}, ErrInvalidSchema, `tool "a": output schema at "/type": unknown type "date"`},
		{"type not string", []tools.Definition{def("a", `{"type":7}`, "")}, Options{}, ErrInvalidSchema, "type must be a string or an array of strings"},
		{"empty type list", []tools.Definition{def("a", `{"type":[]}`, "")}, Options{}, ErrInvalidSchema, "type must not be an empty array"},
		{"enum not array", []tools.Definition{def("a", `{"enum":"x"}`, "")}, Options{}, ErrInvalidSchema, "enum must be an array"},
		{"anyOf empty", []tools.Definition{def("a", `{"anyOf":[]}`, "")}, Options{}, ErrInvalidSchema, "anyOf must be a non-empty array of schemas"},
		{"properties not object", []tools.Definition{def("a", `{"properties":[]}`, "")}, Options{}, ErrInvalidSchema, "properties must be an object"},
		{"required not strings", []tools.Definition{def("a", `{"type":"object","required":[1]}`, "")}, Options{}, ErrInvalidSchema, "required must be an array of strings"},
		{"patternProperties not object", []tools.Definition{def("a", `{"type":"object","patternProperties":1}`, "")}, Options{}, ErrInvalidSchema, "patternProperties must be an object"},
		{"prefixItems not array", []tools.Definition{def("a", `{"prefixItems":{}}`, "")}, Options{}, ErrInvalidSchema, "prefixItems must be an array of schemas"},
		{"ref not string", []tools.Definition{def("a", `{"$ref":1}`, "")}, Options{}, ErrInvalidSchema, "$ref must be a string"},
		{"bad input option", nil, Options{InputSchema: json.RawMessage(`[`)}, ErrInvalidSchema, "input schema is not valid JSON"},
		{"too deep", []tools.Definition{def("a", nested(40), "")}, Options{}, ErrTooDeep, "more than 32 levels"},
		{"too deep custom", []tools.Definition{def("a", nested(5), "")}, Options{MaxDepth: 3}, ErrTooDeep, "more than 3 levels"},
		{"too deep literal", []tools.Definition{def("a", `{"const":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}`, "")}, Options{}, ErrTooDeep, "literal value nests"},
		{"schema too large", []tools.Definition{def("a", `{"description":"`+strings.Repeat("x", tools.MaxSchemaBytes)+`"}`, "")}, Options{}, ErrTooLarge, "more than the 1048576 allowed"},
		{"output too large", []tools.Definition{def("a", `{"properties":{"x":{"description":"`+strings.Repeat("x", 3000)+`"}}}`, "")}, Options{MaxBytes: 2000}, ErrTooLarge, "more than 2000 bytes"},
		{"many tools too large", manyTools(200), Options{MaxBytes: 10000}, ErrTooLarge, "offer fewer tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Generate(tt.defs, tt.opts)
			if err == nil {
				t.Fatalf("Generate succeeded, want an error:\n%s", out)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

func manyTools(n int) []tools.Definition {
	defs := make([]tools.Definition, n)
	for i := range defs {
		defs[i] = def(fmt.Sprintf("tool_%03d", i),
			`{"type":"object","properties":{"id":{"type":"string","description":"The identifier."},"limit":{"type":"integer"}},"required":["id"]}`,
			`{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"score":{"type":"number"}}}}`)
		defs[i].Description = "Does thing number " + fmt.Sprint(i) + "."
	}
	return defs
}

// TestGenerateTypes checks single schemas against the type text they must
// produce, through the declaration of a tool's output type.
func TestGenerateTypes(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"true", `true`, "type TOutput = unknown;"},
		{"false", `false`, "type TOutput = never;"},
		{"empty", `{}`, "type TOutput = unknown;"},
		{"string", `{"type":"string"}`, "type TOutput = string;"},
		{"integer", `{"type":"integer"}`, "type TOutput = number;"},
		{"nullable", `{"type":"boolean","nullable":true}`, "type TOutput = boolean | null;"},
		{"type list dedup", `{"type":["integer","number","null"]}`, "type TOutput = number | null;"},
		{"enum", `{"enum":["a","b",3]}`, `type TOutput = "a" | "b" | 3;`},
		{"enum empty", `{"enum":[]}`, "type TOutput = never;"},
		{"const null", `{"const":null}`, "type TOutput = null;"},
		{"const wins over type", `{"type":"string","const":"x"}`, `type TOutput = "x";`},
		{"anyOf with unknown", `{"anyOf":[{"type":"string"},true]}`, "type TOutput = unknown;"},
		{"allOf with never", `{"allOf":[{"type":"string"},false]}`, "type TOutput = never;"},
		{"union in array", `{"type":"array","items":{"anyOf":[{"type":"string"},{"type":"number"}]}}`, "type TOutput = (string | number)[];"},
		{"union in intersection", `{"allOf":[{"anyOf":[{"type":"string"},{"type":"number"}]},{"anyOf":[{"const":1},{"const":"a"}]}]}`, `type TOutput = (string | number) & (1 | "a");`},
		{"tuple closed", `{"prefixItems":[{"type":"string"}],"items":false,"minItems":1}`, "type TOutput = [string];"},
		{"tuple optional union", `{"prefixItems":[{"type":["string","null"]}],"items":false}`, "type TOutput = [(string | null)?];"},
		{"tuple rest union", `{"prefixItems":[],"items":{"type":["string","null"]}}`, "type TOutput = [...(string | null)[]];"},
		{"self alias", `{"$ref":"#"}`, "type TOutput = unknown;"},
		{"self in union", `{"anyOf":[{"$ref":"#"},{"type":"string"}]}`, "type TOutput = unknown;"},
		{"self in array", `{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"string"}]}`, "type TOutput = TOutput[] | string;"},
		{"external ref", `{"$ref":"https://example.com/s.json"}`, "type TOutput = unknown;"},
		{"bad escape ref", `{"$ref":"#/%zz"}`, "type TOutput = unknown;"},
		{"array index ref", `{"type":"array","prefixItems":[{"type":"string"}],"items":{"$ref":"#/prefixItems/0"}}`, "type TOutput = [string?, ...TT0[]];"},
		{"number too big", `{"const":1e999}`, "type TOutput = number;"},
		{"dynamic ref root", `{"anyOf":[{"type":"string"},{"type":"array","items":{"$dynamicRef":"#"}}]}`, "type TOutput = string | TOutput[];"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Generate([]tools.Definition{def("t", "", tt.schema)}, Options{OmitDocs: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "\n"+tt.want+"\n") {
				t.Errorf("want line %q in:\n%s", tt.want, out)
			}
		})
	}
}

func TestArgsOptional(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"no schema", "", "t(args?: Record<string, unknown>)"},
		{"open object", `{"type":"object"}`, "t(args?: TInput)"},
		{"no required", `{"type":"object","properties":{"a":{"type":"string"}}}`, "t(args?: TInput)"},
		{"required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, "t(args: TInput)"},
		{"union", `{"anyOf":[{"type":"object"},{"type":"string"}]}`, "t(args: TInput)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Generate([]tools.Definition{def("t", tt.schema, "")}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("want %q in:\n%s", tt.want, out)
			}
		})
	}
}

func TestPascal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"get_expenses", "GetExpenses"},
		{"github.search_issues", "GithubSearchIssues"},
		{"list-events", "ListEvents"},
		{"getExpenses", "GetExpenses"},
		{"a$b", "A$b"},
		{"_", "Tool"},
		{"9lives", "T9lives"},
		{"héllo wörld", "HLloWRld"},
		{strings.Repeat("a", 200), "A" + strings.Repeat("a", maxNamePart-1)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := pascal(tt.in, "Tool"); got != tt.want {
				t.Errorf("pascal(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNamesAvoidReserved(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		defName string
		want    string
	}{
		{"ptc input", "ptc", "", "interface PtcInput2 "},
		{"global type", "array", "Buffer", "type ArrayBuffer2 = string;"},
		{"error type", "tool", "Error", "type ToolError2 = string;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"type":"object","properties":{"x":{"type":"string"}}}`
			if tt.defName != "" {
				in = `{"type":"object","properties":{"x":{"$ref":"#/$defs/` + tt.defName + `"}},"$defs":{"` + tt.defName + `":{"type":"string"}}}`
			}
			out, err := Generate([]tools.Definition{def(tt.tool, in, "")}, Options{OmitDocs: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("want %q in:\n%s", tt.want, out)
			}
		})
	}
}

func TestDocSafety(t *testing.T) {
	d := def("t", `{"type":"object","properties":{"x":{"type":"string","description":"ends */ here\u2028next\rline","examples":["*/", 2, 3, 4],"default":"`+strings.Repeat("d", 500)+`"}}}`, "")
	d.Description = "Tool */ description."
	out, err := Generate([]tools.Definition{d}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"ends */", "Tool */", "\u2028", "\r", `@example 4`} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, `@default "ddd`) || !strings.Contains(out, "…") {
		t.Errorf("long default not truncated:\n%s", out)
	}
}

func TestOmitDocs(t *testing.T) {
	f := loadFixture(t, "testdata/expenses.json")
	out, err := Generate(f.Tools, Options{OmitDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "/**") {
		t.Errorf("OmitDocs output has JSDoc:\n%s", out)
	}
}

// TestApprovalNote: the doc comment of a tool whose calls need approval
// says so, in both layouts; other tools' do not.
func TestApprovalNote(t *testing.T) {
	gated := def("refund", `{"type":"object"}`, "")
	gated.Description = "Refunds an order."
	gated.RequiresApproval = true
	free := def("lookup", `{"type":"object"}`, "")
	free.Description = "Looks an order up."
	for _, opts := range []Options{{}, {Compact: true}} {
		out, err := Generate([]tools.Definition{gated, free}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out, approvalNote); n != 1 {
			t.Errorf("%+v: the approval note appears %d times, want 1:\n%s", opts, n, out)
		}
		if i, j := strings.Index(out, approvalNote), strings.Index(out, "refund("); i < 0 || j < i {
			t.Errorf("%+v: the note is not on refund:\n%s", opts, out)
		}
	}
}
