package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/ptcrun/ptc/tools"
)

// argsError says in the demo's own words why arguments did not decode:
// encoding/json's errors name Go types and struct fields ("cannot
// unmarshal number into Go struct field budgetArgs.level of type
// string"), which a script or a model must never see.
func argsError(tool string, err error) error {
	const hint = "pass a JSON object matching its input schema"
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		what := "the arguments"
		if te.Field != "" {
			what = fmt.Sprintf("%q", te.Field)
		}
		return tools.Errorf(tools.CodeInvalidArguments, "arguments of %s are invalid: %s must be %s, not %s; %s",
			tool, what, jsonKind(te.Type), valueKind(te.Value), hint)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return tools.Errorf(tools.CodeInvalidArguments, "arguments of %s are invalid: they are not JSON; %s", tool, hint)
	}
	// DisallowUnknownFields reports `json: unknown field "x"`, no type.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return tools.Errorf(tools.CodeInvalidArguments, "arguments of %s are invalid: unknown field %s; %s", tool, name, hint)
	}
	return tools.Errorf(tools.CodeInvalidArguments, "arguments of %s are invalid; %s", tool, hint)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}

// valueKind names the JSON value encoding/json describes as v ("number",
// "bool", "number 1e400", ...).
func valueKind(v string) string {
	kind, lit, _ := strings.Cut(v, " ")
	switch kind {
	case "number", "string", "array", "object":
		if lit != "" {
			return "the " + kind + " " + lit
		}
		if kind == "array" || kind == "object" {
			return "an " + kind
		}
		return "a " + kind
	case "bool":
		return "a boolean"
	}
	return "another value"
}
