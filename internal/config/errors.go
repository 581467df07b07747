package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/suggest"
)

// Error is a problem with one key of the configuration: which key, where
// its value came from, what is wrong and what to do. Its text is
//
//	config: ptcd.yaml:4:14: limits.defaults.timeout: 10m0s is above its ceiling limits.ceilings.timeout (5m0s): lower the default or raise the ceiling
//	config: limits.defaults.timeout (environment variable PTC_LIMITS_DEFAULTS_TIMEOUT): duration "soon" is invalid: write e.g. "30s" or "5m"
type Error struct {
	// Key is the key's dotted path: "limits.defaults.timeout",
	// "tool_sources[0].type"; empty for the file as a whole.
	Key string
	// File and Line, Column locate the value in the configuration file
	// (File is empty for Parse); Line is zero when the value did not come
	// from the file.
	File         string
	Line, Column int
	// Origin names where a value that did not come from the file came
	// from: "environment variable PTC_LISTEN", "flag -listen".
	Origin string
	// Msg says what is wrong and what to do.
	Msg string
}

// Error returns the message; see Error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config: ")
	switch {
	case e.Line > 0 && e.File != "":
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.File != "":
		b.WriteString(e.File + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		if e.Origin != "" {
			b.WriteString(" (" + e.Origin + ")")
		}
		// "tls.key_file is not set ...", "limits.defaults.timeout: 10m0s is ...".
		if predicate(e.Msg) {
			b.WriteString(" ")
		} else {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Msg)
	return b.String()
}

// predicate reports whether a message continues a sentence whose subject
// is the key ("is required", "needs tls.client_ca_file") rather than
// starting with the value.
func predicate(msg string) bool {
	for _, p := range []string{"is ", "needs ", "need ", "applies ", "must ", "has ", "cannot ", "names "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// keyError returns an *Error for key with a formatted message.
func keyError(key, format string, args ...any) *Error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// nodeError is an error found while decoding a node (by the types'
// UnmarshalYAML); decodeError turns it into an *Error at the node.
type nodeError struct {
	node ast.Node
	msg  string
}

func (e *nodeError) Error() string { return e.msg }

// keyOf returns the dotted key of a node's path: "$.limits.defaults" is
// "limits.defaults".
func keyOf(n ast.Node) string {
	return strings.TrimPrefix(strings.TrimPrefix(n.GetPath(), "$"), ".")
}

// decodeError turns an error of the YAML decoder into an *Error that
// names the key and its position in the file, and says what to write.
func decodeError(file string, doc ast.Node, err error) error {
	var ne *nodeError
	if errors.As(err, &ne) {
		tk := ne.node.GetToken()
		return &Error{Key: keyOf(ne.node), File: file, Line: tk.Position.Line, Column: tk.Position.Column, Msg: ne.msg}
	}
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return &Error{File: file, Msg: err.Error()}
	}
	tk := ye.GetToken()
	e := &Error{File: file, Line: tk.Position.Line, Column: tk.Position.Column, Msg: ye.GetMessage()}
	n := nodeAt(doc, tk)
	if n != nil {
		e.Key = keyOf(n)
	}
	var (
		unknown *yaml.UnknownFieldError
		typ     *yaml.TypeError
		node    *yaml.UnexpectedNodeTypeError
		dup     *yaml.DuplicateKeyError
		over    *yaml.OverflowError
	)
	switch {
	case errors.As(err, &unknown):
		parent := e.Key
		if i := strings.LastIndexAny(parent, ".["); i >= 0 {
			parent = parent[:i]
		} else {
			parent = ""
		}
		e.Msg = unknownKey(tk.Value, keysAt(parent))
	case errors.As(err, &typ):
		e.Msg = fmt.Sprintf("want %s, not %s", kindName(typ.DstType), valueName(n))
	case errors.As(err, &node) && e.Key == "":
		e.Msg = fmt.Sprintf("the file must hold a mapping of keys (listen: ..., limits: ...), not %s", nodeTypeName(node.Actual))
	case errors.As(err, &node):
		e.Msg = fmt.Sprintf("want %s, not %s", nodeTypeName(node.Expected), nodeTypeName(node.Actual))
	case errors.As(err, &dup):
		e.Msg = "the key is set twice: keep one"
	case errors.As(err, &over):
		e.Msg = fmt.Sprintf("%s is too large for %s", over.SrcNum, kindName(over.DstType))
	}
	return e
}

// duplicateKey reports the first key set twice in one mapping of doc.
func duplicateKey(file string, doc ast.Node) error {
	var dup *Error
	ast.Walk(visitFunc(func(n ast.Node) bool {
		m, ok := n.(*ast.MappingNode)
		if dup != nil || !ok {
			return dup == nil
		}
		first := map[string]*token.Token{}
		for _, v := range m.Values {
			tk := v.Key.GetToken()
			if prev, seen := first[tk.Value]; seen {
				dup = &Error{Key: keyOf(v.Key), File: file, Line: tk.Position.Line, Column: tk.Position.Column,
					Msg: fmt.Sprintf("is set twice (first at line %d): keep one", prev.Position.Line)}
				return false
			}
			first[tk.Value] = tk
		}
		return true
	}), doc)
	if dup != nil {
		return dup
	}
	return nil
}

// nodeAt finds the node the token belongs to: a value, or a mapping key
// (whose path is the path of its value).
func nodeAt(doc ast.Node, tk *token.Token) ast.Node {
	if doc == nil {
		return nil
	}
	var found ast.Node
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if t := n.GetToken(); t != nil && t.Position.Line == tk.Position.Line && t.Position.Column == tk.Position.Column {
			if _, isMV := n.(*ast.MappingValueNode); !isMV {
				found = n
				return false
			}
		}
		return true
	}), doc)
	return found
}

// visitFunc adapts a function to ast.Visitor: it walks a node's children
// while the function returns true.
type visitFunc func(ast.Node) bool

// Visit implements ast.Visitor.
func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}

// locate returns the position of key's value in the document. A key the
// document does not set inside a list item ("tool_sources[0].type") is
// located at the item; elsewhere it has no position (zero).
func locate(doc ast.Node, key string) (line, col int) {
	for doc != nil && key != "" {
		if p, err := yaml.PathString("$." + key); err == nil {
			if n, err := p.FilterNode(doc); err == nil && n != nil {
				pos := start(n).Position
				return pos.Line, pos.Column
			}
		}
		i := strings.LastIndexAny(key, ".")
		if i < 0 || !strings.Contains(key[:i], "[") {
			break
		}
		key = key[:i]
	}
	return 0, 0
}

// start returns the token where a node starts: a mapping's first key
// rather than its first colon.
func start(n ast.Node) *token.Token {
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 {
			return start(m.Values[0])
		}
	case *ast.MappingValueNode:
		return m.Key.GetToken()
	}
	return n.GetToken()
}

// unknownKey is the message of a key the configuration does not have:
// the keys that are allowed there, and the closest one.
func unknownKey(name string, allowed []string) string {
	msg := fmt.Sprintf("unknown key %q", name)
	if len(allowed) == 0 {
		return msg
	}
	if s := closest(name, allowed); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg + ": the keys here are " + strings.Join(allowed, ", ")
}

// keysAt returns the keys allowed in the mapping at a dotted path of the
// configuration ("" is the top level, "tool_sources[0].policy" a source's
// policy), from the yaml tags of Config's types.
func keysAt(path string) []string {
	t := reflect.TypeFor[Config]()
	for _, seg := range strings.FieldsFunc(strings.ReplaceAll(path, "]", ""), func(r rune) bool { return r == '.' || r == '[' }) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if _, err := strconv.Atoi(seg); err == nil {
			continue // a sequence index: already at the element
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		next := reflect.Type(nil)
		for i := 0; i < t.NumField(); i++ {
			if tagName(t.Field(i)) == seg {
				next = t.Field(i).Type
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t == reflect.TypeFor[LimitValues]() {
		var out []string
		for _, f := range limits.Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := tagName(t.Field(i)); n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// closest returns the allowed key nearest to name when it is near enough
// to be a typo (see suggest.Closest).
func closest(name string, allowed []string) string { return suggest.Closest(name, allowed) }

// kindName says in YAML terms what a Go type wants.
func kindName(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	switch t {
	case reflect.TypeFor[Duration]():
		return `a duration such as "30s"`
	case reflect.TypeFor[ByteSize]():
		return `a size such as "64MiB"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return "another value"
}

// valueName describes a node for a message: `the string "many"`, "a
// list".
func valueName(n ast.Node) string {
	if n == nil {
		return "this value"
	}
	switch n.Type() {
	case ast.StringType:
		return strconv.Quote(n.GetToken().Value)
	case ast.SequenceType, ast.MappingType, ast.MappingValueType:
		return nodeTypeName(n.Type())
	}
	return n.GetToken().Value
}

// nodeTypeName names a YAML node type for a message.
func nodeTypeName(t ast.NodeType) string {
	switch t {
	case ast.SequenceType:
		return "a list"
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.StringType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "an empty value"
	}
	return "a " + strings.ToLower(t.String())
}
