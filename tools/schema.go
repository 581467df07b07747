package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ptcrun/ptc/internal/jsonval"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
}

// Violation is one reason a document does not match a schema.
type Violation struct {
	// Path is the JSON pointer of the offending value ("" is the root).
	Path string `json:"path"`
	// Keyword is the schema keyword that failed, e.g. "required".
	Keyword string `json:"keyword"`
	// Message says what is wrong, in English.
	Message string `json:"message"`
}

// noLoader refuses every external load: schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed: schemas must be self-contained (use $defs)", url)
}

var printer = message.NewPrinter(language.English)

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it
// declares another $schema). External references are refused.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("schema is %d bytes, more than the %d allowed", len(raw), MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %v", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("schema must be a JSON object or boolean")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("schema: %v", err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %s", cleanSchemaError(err))
	}
	return &Schema{raw: append(json.RawMessage(nil), raw...), compiled: compiled}, nil
}

// cleanSchemaError drops the synthetic resource URL from compiler messages.
func cleanSchemaError(err error) string {
	s := err.Error()
	s = strings.ReplaceAll(s, "mem:///schema.json", "")
	return strings.TrimSpace(s)
}

// Raw returns the schema document as given.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// errInvalidJSON is wrapped by Validate's error for a document that is not
// JSON (and jsonval.ErrTooDeep for one nested too deep).
var errInvalidJSON = errors.New("not valid JSON")

// Validate checks doc against the schema. It returns nil when doc matches,
// the violations (at most MaxViolations) when it does not, and an error
// when doc is not JSON.
func (s *Schema) Validate(doc json.RawMessage) ([]Violation, error) {
	v, err := jsonval.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJSON, err)
	}
	return s.validateValue(v), nil
}

// validateValue checks a value decoded as Validate decodes documents.
func (s *Schema) validateValue(v any) []Violation {
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	collectLeaves(ve, &out)
	if len(out) == 0 {
		out = append(out, Violation{Path: pointer(ve.InstanceLocation), Message: ve.ErrorKind.LocalizedString(printer)})
	}
	return out
}

func collectLeaves(e *jsonschema.ValidationError, out *[]Violation) {
	if len(*out) >= MaxViolations {
		return
	}
	if len(e.Causes) == 0 {
		kw := ""
		if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
			kw = p[len(p)-1]
		}
		*out = append(*out, Violation{
			Path:    pointer(e.InstanceLocation),
			Keyword: kw,
			Message: e.ErrorKind.LocalizedString(printer),
		})
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// FormatViolations renders violations as one line each: "path: message".
func FormatViolations(vs []Violation) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString("; ")
		}
		p := v.Path
		if p == "" {
			p = "(root)"
		}
		b.WriteString(p)
		b.WriteString(": ")
		b.WriteString(v.Message)
	}
	return b.String()
}
