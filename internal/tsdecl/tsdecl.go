package tsdecl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ptcrun/ptc/tools"
)

// DefaultMaxDepth is the schema nesting depth Generate accepts when
// Options.MaxDepth is zero.
const DefaultMaxDepth = 32

// DefaultMaxBytes is the output size Generate accepts when Options.MaxBytes
// is zero.
const DefaultMaxBytes = 1 << 20

// ErrTooDeep is wrapped by the error Generate returns for a schema nested
// deeper than the depth limit.
var ErrTooDeep = errors.New("schema nests too deeply")

// ErrTooLarge is wrapped by the error Generate returns when the
// declarations would exceed the size limit.
var ErrTooLarge = errors.New("declarations are too large")

// ErrInvalidSchema is wrapped by the error Generate returns for a schema
// that is not valid JSON or not a JSON Schema.
var ErrInvalidSchema = errors.New("invalid schema")

// ErrInvalidTool is wrapped by the error Generate returns for an invalid,
// duplicated or clashing tool name.
var ErrInvalidTool = errors.New("invalid tool")

// Options tunes Generate. The zero value is ready to use.
type Options struct {
	// InputSchema, when set, is the JSON Schema of the request's input
	// value: `input` is declared with the type PtcInput generated from it
	// instead of unknown.
	InputSchema json.RawMessage
	// MaxDepth bounds schema nesting; zero means DefaultMaxDepth.
	MaxDepth int
	// MaxBytes bounds the size of the output; zero means DefaultMaxBytes.
	MaxBytes int
	// OmitDocs leaves out every JSDoc comment, for the most compact text.
	OmitDocs bool
	// Compact writes every JSDoc comment on one line and leaves out the
	// header comment, the declarations of `input`, the error types and
	// `console`: the tools and their types alone, for a model that has the
	// script contract already (ptc's MCP tools).
	Compact bool
}

// Generate returns TypeScript declarations for defs: `declare const tools`
// with one method per tool (dotted names nest), a named type per input and
// output schema (PascalCase of the tool name plus Input or Output, made
// unique), `declare const input`, the error types a failed call rejects
// with (ToolArgumentError, ToolError, ToolCallLimitError and their union
// PtcToolError) and `declare const console`. The text is a self-contained
// global declaration file; the result is the same for the same definitions
// in any order.
//
// A tool without an input schema takes any object; one without an output
// schema returns unknown. The args parameter is optional when the input
// schema is an object without required properties.
func Generate(defs []tools.Definition, opts Options) (string, error) {
	maxDepth := opts.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}

	sorted := append([]tools.Definition(nil), defs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	if err := checkNames(sorted); err != nil {
		return "", err
	}

	names := newNamer()
	c := &converter{maxDepth: maxDepth, docs: !opts.OmitDocs, names: names}
	entries := make([]*entry, len(sorted))
	var inputDoc *document
	var err error
	if len(opts.InputSchema) > 0 && !opts.Compact {
		if inputDoc, err = newDocument("input schema", opts.InputSchema, "PtcInput", "PtcInput"); err != nil {
			return "", err
		}
	}
	// Name every tool's types first, so that they do not depend on the
	// definitions other tools happen to reference.
	for i, d := range sorted {
		base := pascal(d.Name, "Tool")
		e := &entry{def: d}
		if len(d.InputSchema) > 0 {
			if e.in, err = newDocument(fmt.Sprintf("tool %q: input schema", d.Name), d.InputSchema, base, names.alloc(base+"Input")); err != nil {
				return "", err
			}
		}
		if len(d.OutputSchema) > 0 {
			if e.out, err = newDocument(fmt.Sprintf("tool %q: output schema", d.Name), d.OutputSchema, base, names.alloc(base+"Output")); err != nil {
				return "", err
			}
		}
		entries[i] = e
	}
	docs := []*document{inputDoc}
	for _, e := range entries {
		docs = append(docs, e.in, e.out)
	}
	for _, doc := range docs {
		if doc == nil {
			continue
		}
		c.convertDocument(doc)
		if c.err != nil {
			if errors.Is(c.err, ErrTooDeep) {
				return "", c.err
			}
			return "", fmt.Errorf("%w: %w", ErrInvalidSchema, c.err)
		}
	}
	breakCycles(c.decls)

	p := &printer{max: maxBytes, compact: opts.Compact}
	var b strings.Builder
	if !opts.Compact {
		b.WriteString("// Tools this script may call. The script is the body of an async function:\n")
		b.WriteString("// await the calls and `return` a small JSON value as the result.\n\n")
	}

	// The tools object.
	root := &nsNode{}
	for _, e := range entries {
		root.insert(strings.Split(e.def.Name, "."), e)
	}
	b.WriteString("declare const tools: ")
	writeNamespace(&b, root, 0, !opts.OmitDocs, opts.Compact)
	b.WriteString(";\n")

	if !opts.Compact {
		b.WriteByte('\n')
		if !opts.OmitDocs {
			b.WriteString("/** The request's input value. */\n")
		}
		if inputDoc != nil {
			b.WriteString("declare const input: PtcInput;\n")
		} else {
			b.WriteString("declare const input: unknown;\n")
		}
	}

	for _, d := range c.decls {
		b.WriteByte('\n')
		writeDoc(&b, "", d.doc, opts.Compact)
		if d.body.kind == kindObject {
			b.WriteString("interface " + d.name + " ")
			s, _ := p.typ(d.body, 0)
			b.WriteString(s)
			b.WriteByte('\n')
		} else {
			s, _ := p.typ(d.body, 0)
			b.WriteString("type " + d.name + " = " + s + ";\n")
		}
		if p.over(b.Len()) {
			return "", p.err
		}
	}

	if opts.Compact {
		return b.String(), nil
	}
	b.WriteByte('\n')
	if opts.OmitDocs {
		b.WriteString(stripDocs(preamble))
	} else {
		b.WriteString(preamble)
	}
	if p.over(b.Len()) {
		return "", p.err
	}
	return b.String(), nil
}

// preamble declares the error types and console.
const preamble = `/** One way a value fails a JSON Schema. */
interface PtcSchemaViolation {
  /** JSON pointer of the offending value ("" is the whole value). */
  path: string;
  /** The schema keyword that failed, e.g. "required". */
  keyword: string;
  message: string;
}

/** A call's arguments do not match the tool's input schema (code "invalid_arguments"), or the tool is unknown ("unknown_tool"). */
interface ToolArgumentError {
  name: "ToolArgumentError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

/** The tool failed; code is the tool's own code, or e.g. "tool_failed", "invalid_output", "timeout". */
interface ToolError {
  name: "ToolError";
  tool: string;
  code: string;
  message: string;
  errors?: PtcSchemaViolation[];
}

/** The execution has used up its tool calls (code "tool_call_limit"). */
interface ToolCallLimitError {
  name: "ToolCallLimitError";
  tool: string;
  code: string;
  message: string;
}

/** What a failed tool call rejects with: catch (e) { const err = e as PtcToolError; ... }. */
type PtcToolError = ToolArgumentError | ToolError | ToolCallLimitError;

/** Logs for the operator; never returned to the model. */
declare const console: {
  log(...data: unknown[]): void;
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
  debug(...data: unknown[]): void;
};
`

// stripDocs drops the JSDoc lines of the preamble.
func stripDocs(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "/**") {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

// newDocument parses a schema document whose root type is named rootName.
func newDocument(what string, raw json.RawMessage, base, rootName string) (*document, error) {
	if len(raw) > tools.MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed", ErrTooLarge, what, len(raw), tools.MaxSchemaBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("%w: %s is not valid JSON: %v", ErrInvalidSchema, what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s has data after the JSON value", ErrInvalidSchema, what)
	}
	return &document{what: what, root: root, base: base, rootDecl: &decl{name: rootName}}, nil
}

// checkNames rejects invalid, duplicated and clashing tool names; defs are
// sorted by name.
func checkNames(defs []tools.Definition) error {
	seen := make(map[string]bool, len(defs))
	for i, d := range defs {
		if err := tools.ValidateName(d.Name); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidTool, err)
		}
		if i > 0 && defs[i-1].Name == d.Name {
			return fmt.Errorf("%w: tool %q is listed twice; give each tool a unique name", ErrInvalidTool, d.Name)
		}
		seen[d.Name] = true
	}
	for _, d := range defs {
		for i := 0; i < len(d.Name); i++ {
			if d.Name[i] == '.' && seen[d.Name[:i]] {
				return fmt.Errorf("%w: tool %q clashes with tool %q: a name cannot also be a namespace", ErrInvalidTool, d.Name, d.Name[:i])
			}
		}
	}
	return nil
}

// argsOptional reports whether an input type accepts an empty object.
func argsOptional(t *tsType) bool {
	if t.kind != kindObject {
		return t.kind == kindPrim && t.text == "unknown"
	}
	for _, p := range t.props {
		if !p.optional {
			return false
		}
	}
	return true
}

// breakCycles marks the bare references that would make type aliases
// circular, so that they print as unknown.
func breakCycles(decls []*decl) {
	var visit func(d *decl)
	visit = func(d *decl) {
		d.state = 1
		for _, r := range d.bare {
			switch r.ref.state {
			case 0:
				visit(r.ref)
			case 1:
				r.broken = true
			}
		}
		d.state = 2
	}
	for _, d := range decls {
		if d.state == 0 {
			visit(d)
		}
	}
}

// entry is one tool and its parsed schema documents (nil when absent).
type entry struct {
	def     tools.Definition
	in, out *document
}

// signature returns the parameter list and return type of e's method.
func (e *entry) signature() string {
	var in string
	switch {
	case e.in == nil:
		in = "args?: Record<string, unknown>"
	case argsOptional(e.in.rootDecl.body):
		in = "args?: " + e.in.rootDecl.name
	default:
		in = "args: " + e.in.rootDecl.name
	}
	out := "unknown"
	if e.out != nil {
		out = e.out.rootDecl.name
	}
	return "(" + in + "): Promise<" + out + ">"
}

// nsNode is one level of the tools object: a namespace, or a tool when
// leaf is set.
type nsNode struct {
	keys     []string
	children map[string]*nsNode
	leaf     *entry
}

func (n *nsNode) insert(path []string, e *entry) {
	if len(path) == 0 {
		n.leaf = e
		return
	}
	if n.children == nil {
		n.children = map[string]*nsNode{}
	}
	child, ok := n.children[path[0]]
	if !ok {
		child = &nsNode{}
		n.children[path[0]] = child
		n.keys = append(n.keys, path[0])
	}
	child.insert(path[1:], e)
}

// writeNamespace writes the object type of a namespace node.
func writeNamespace(b *strings.Builder, n *nsNode, indent int, docs, compact bool) {
	keys := append([]string(nil), n.keys...)
	sort.Strings(keys)
	if len(keys) == 0 {
		b.WriteString("{}")
		return
	}
	pad := strings.Repeat("  ", indent+1)
	b.WriteString("{\n")
	for _, k := range keys {
		child := n.children[k]
		if child.leaf != nil {
			if docs {
				writeDoc(b, pad, docLines(child.leaf.def), compact)
			}
			b.WriteString(pad + propName(k) + child.leaf.signature() + ";\n")
			continue
		}
		b.WriteString(pad + propName(k) + ": ")
		writeNamespace(b, child, indent+1, docs, compact)
		b.WriteString(";\n")
	}
	b.WriteString(strings.Repeat("  ", indent) + "}")
}
