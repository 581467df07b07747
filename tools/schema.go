package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/ptcrun/ptc/internal/jsonschema"
	"github.com/ptcrun/ptc/internal/jsonval"
)

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
	values   int
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
	values, err := checkShape(doc)
	if err != nil {
		return nil, err
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
	return &Schema{raw: append(json.RawMessage(nil), raw...), compiled: compiled, values: values}, nil
}

// Values is the number of JSON values in the schema document, what
// compiling it and holding it compiled cost in proportion to (about 20 µs
// and 450 bytes each).
func (s *Schema) Values() int { return s.values }

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

// ErrCheckTooCostly is wrapped by Validate's error when checking a
// document against a schema takes more steps, time or errors than a
// document of its size may (see schemaSteps): the schema makes the check
// cost more than ptc spends on it, as nested anyOf and $ref can (2^n
// steps for n levels).
var ErrCheckTooCostly = errors.New("checking the document against the schema takes too long")

// Bounds on one check of a document against a schema, in the steps of
// the schema library: applying a subschema to a value is one, and more
// for a large value (one for every 64 bytes of a string, one for every
// member of an object or array); making an error is one.
const (
	// schemaSteps is what a check may take beyond schemaStepsPerValue for
	// every value of the document.
	schemaSteps = 200_000
	// schemaStepsPerValue is what a check may take for every value of
	// the document (and every 64 bytes of a string, jsonschema.Size).
	// A plain schema takes one or two; an anyOf of ten object types
	// about ten. Spaces between values cost nothing.
	schemaStepsPerValue = 32
	// checkTimePerMiB backs the steps up: both passes of one check end
	// within 1 + (the document's MiB) of them, whatever the steps missed.
	// A check of a document of 1 MiB of ordinary objects takes well under
	// one.
	checkTimePerMiB = 2 * time.Second
	// maxCheckErrors bounds the errors one pass makes (each about 100
	// bytes, kept until its anyOf ends).
	maxCheckErrors = 500_000
)

// Validate checks doc against the schema. It returns nil when doc matches,
// the violations (at most MaxViolations) when it does not, and an error
// when doc is not JSON or the check costs more than its bound (an error
// wrapping ErrCheckTooCostly).
func (s *Schema) Validate(doc json.RawMessage) ([]Violation, error) {
	return s.ValidateContext(context.Background(), doc)
}

// ValidateContext is Validate stopped by ctx: when ctx ends first, the
// error wraps ctx.Err().
func (s *Schema) ValidateContext(ctx context.Context, doc json.RawMessage) ([]Violation, error) {
	v, err := jsonval.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJSON, err)
	}
	// Whether doc matches is found first, in the library's quick mode: it
	// keeps no error for a branch that failed. Only a document that does
	// not match is checked again for the violations.
	steps := schemaSteps + schemaStepsPerValue*jsonschema.Size(v)
	deadline := time.Now().Add(checkTimePerMiB + time.Duration(len(doc))*checkTimePerMiB/(1<<20))
	lim := jsonschema.Limit{Steps: steps, Done: ctx.Done(), Deadline: deadline, Errors: maxCheckErrors, Quick: true}
	err = s.compiled.ValidateWithin(v, lim)
	if err == nil {
		return nil, nil
	}
	if err := checkError(ctx, err, steps); err != nil {
		return nil, err
	}
	lim.Quick = false
	err = s.compiled.ValidateWithin(v, lim)
	if errors.Is(err, jsonschema.ErrLimit) {
		// The document does not match; what the details cost is not
		// worth spending twice.
		return []Violation{{Message: "the document does not match the schema (finding where took too long)"}}, nil
	}
	if err := checkError(ctx, err, steps); err != nil {
		return nil, err
	}
	return violations(err), nil
}

// checkError is the error of a check that ended with err, or nil when err
// says the document does not match.
func checkError(ctx context.Context, err error, steps int64) error {
	switch {
	case errors.Is(err, jsonschema.ErrLimit):
		return fmt.Errorf("%w: it took more steps than the %d a document of its size may, or more time", ErrCheckTooCostly, steps)
	case errors.Is(err, jsonschema.ErrStopped):
		return fmt.Errorf("checking against the schema stopped: %w", context.Cause(ctx))
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("checking against the schema failed: %v", err)
	}
	return nil
}

// maxViolationText bounds a violation's path and message: the library
// quotes the value (a string of megabytes, every value of an enum).
const maxViolationText = 512

// cut cuts s to maxViolationText bytes, on a UTF-8 boundary.
func cut(s string) string {
	if len(s) <= maxViolationText {
		return s
	}
	return strings.ToValidUTF8(s[:maxViolationText], "") + "…"
}

// violations lists what err, a *jsonschema.ValidationError, says.
func violations(err error) []Violation {
	var ve *jsonschema.ValidationError
	errors.As(err, &ve)
	var out []Violation
	collectLeaves(ve, &out)
	if len(out) == 0 {
		out = append(out, Violation{Path: cut(pointer(ve.InstanceLocation)), Message: cut(ve.ErrorKind.LocalizedString(printer))})
	}
	return out
}

// Bounds on a schema document, checked before it is compiled.
const (
	// maxSchemaValues bounds the JSON values (objects, arrays, strings,
	// numbers, booleans, nulls) in one schema document: compiling takes
	// about 20 µs and holds about 450 bytes for each. The largest schemas
	// of public MCP tools have a few hundred.
	maxSchemaValues = 10_000
	// maxSchemaDepth bounds how deeply a schema document nests (a JSON
	// value at the top is at depth 1): compiling grows faster than the
	// depth (5,000 nested "not": 109 s).
	maxSchemaDepth = 64
	// maxSchemaRegexpSize bounds the regular expressions of one schema
	// document (every "pattern" value and "patternProperties" name), in
	// the instructions they compile to: 4,000 patterns of 1,000 took 2.2 s
	// and 900 MB to compile.
	maxSchemaRegexpSize = 50_000
	// maxSchemaName and maxSchemaString bound a schema's member names and
	// string values: every pointer and location under a name copies it,
	// and a long $id is parsed again for every $ref (a 300 KB name over
	// 3,000 subschemas: 2.8 s and 1.75 GB to compile).
	maxSchemaName   = 1 << 10
	maxSchemaString = 16 << 10
)

// shape walks a schema document for checkShape.
type shape struct {
	values int
	regexp int // the size of the regular expressions seen
	err    error
}

// checkShape holds a schema document to the bounds compiling it within a
// fraction of a second needs: its values, depth, member names, strings and
// regular expressions, and numbers the schema library compares exactly.
// It returns the number of values.
func checkShape(doc any) (int, error) {
	var sh shape
	sh.walk(doc, 1)
	return sh.values, sh.err
}

func (sh *shape) walk(v any, depth int) {
	if sh.err != nil {
		return
	}
	if sh.values++; sh.values > maxSchemaValues {
		sh.err = fmt.Errorf("schema has more than %d JSON values", maxSchemaValues)
		return
	}
	if depth > maxSchemaDepth {
		sh.err = fmt.Errorf("schema is nested more than %d levels deep", maxSchemaDepth)
		return
	}
	switch v := v.(type) {
	case string:
		if len(v) > maxSchemaString {
			sh.err = fmt.Errorf("schema has a string of %d bytes, more than %d", len(v), maxSchemaString)
		}
	case json.Number:
		if !jsonschema.ExactNumber(v) {
			n := string(v)
			if len(n) > 40 {
				n = n[:40] + "…"
			}
			sh.err = fmt.Errorf("schema has the number %s, which is too large: numbers in a schema have at most 1000 characters and an exponent within ±1000", n)
		}
	case map[string]any:
		// A member named so may be a property's name, not the keyword:
		// counted all the same.
		if p, ok := v["pattern"].(string); ok {
			sh.addRegexp(p)
		}
		if pp, ok := v["patternProperties"].(map[string]any); ok {
			for p := range pp {
				sh.addRegexp(p)
			}
		}
		for k, e := range v {
			if len(k) > maxSchemaName {
				sh.err = fmt.Errorf("schema has a member name of %d bytes, more than %d", len(k), maxSchemaName)
				return
			}
			sh.walk(e, depth+1)
		}
	case []any:
		for _, e := range v {
			sh.walk(e, depth+1)
		}
	}
}

// addRegexp counts the regular expression p (one that does not parse is
// the compiler's to refuse).
func (sh *shape) addRegexp(p string) {
	n, err := jsonschema.RegexpSize(p)
	if err != nil || sh.err != nil {
		return
	}
	if sh.regexp += n; sh.regexp > maxSchemaRegexpSize {
		sh.err = fmt.Errorf("schema's regular expressions compile to more than %d instructions in all", maxSchemaRegexpSize)
	}
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
			Path:    cut(pointer(e.InstanceLocation)),
			Keyword: kw,
			Message: cut(e.ErrorKind.LocalizedString(printer)),
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
