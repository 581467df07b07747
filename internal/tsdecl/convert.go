package tsdecl

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// document is one JSON Schema document being converted.
type document struct {
	// what names the document in error messages, e.g. `tool "x": input schema`.
	what string
	root any
	// base prefixes the names of the document's referenced definitions.
	base string
	// rootDecl is the named type of the whole document.
	rootDecl *decl
	// refs maps a JSON pointer to the declaration generated for it.
	refs map[string]*decl
}

// pending is a referenced schema whose declaration is still to convert.
type pending struct {
	doc  *document
	node any
	d    *decl
	path string
}

// converter turns schema documents into declarations. It is used once.
type converter struct {
	maxDepth int
	docs     bool
	names    *namer
	decls    []*decl
	queue    []pending
	cur      *decl
	err      error
}

// convertDocument converts doc into doc.rootDecl and the declarations of
// the definitions it references.
func (c *converter) convertDocument(doc *document) {
	doc.refs = map[string]*decl{"": doc.rootDecl}
	c.decls = append(c.decls, doc.rootDecl)
	c.queue = append(c.queue[:0], pending{doc: doc, node: doc.root, d: doc.rootDecl, path: ""})
	for len(c.queue) > 0 && c.err == nil {
		p := c.queue[0]
		c.queue = c.queue[1:]
		c.cur = p.d
		p.d.body = c.conv(doc, p.node, 0, true, p.path)
		if c.docs {
			p.d.doc = c.schemaDoc(p.node)
		}
	}
}

func (c *converter) fail(doc *document, path, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s at %s: %s", doc.what, pointerText(path), fmt.Sprintf(format, args...))
	}
}

func pointerText(path string) string {
	if path == "" {
		return "the root"
	}
	return strconv.Quote(path)
}

// conv converts schema n at path. bare is true while n is the body of a
// declaration or a union/intersection member of it.
func (c *converter) conv(doc *document, n any, depth int, bare bool, path string) *tsType {
	if c.err != nil {
		return tUnknown
	}
	if depth > c.maxDepth {
		if c.err == nil {
			c.err = fmt.Errorf("%s at %s: %w: more than %d levels; flatten the schema or move parts into $defs",
				doc.what, pointerText(path), ErrTooDeep, c.maxDepth)
		}
		return tUnknown
	}
	switch s := n.(type) {
	case bool:
		if s {
			return tUnknown
		}
		return tNever
	case map[string]any:
		return c.convObject(doc, s, depth, bare, path)
	default:
		c.fail(doc, path, "a schema must be a JSON object or a boolean, not %s", jsonKind(n))
		return tUnknown
	}
}

func (c *converter) convObject(doc *document, s map[string]any, depth int, bare bool, path string) *tsType {
	var parts []*tsType
	for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		v, ok := s[kw]
		if !ok {
			continue
		}
		r, ok := v.(string)
		if !ok {
			c.fail(doc, path+"/"+kw, "%s must be a string", kw)
			return tUnknown
		}
		parts = append(parts, c.ref(doc, r, bare))
		break
	}
	if v, ok := s["const"]; ok {
		parts = append(parts, c.literal(doc, v, depth+1, path+"/const"))
	} else if v, ok := s["enum"]; ok {
		vals, ok := v.([]any)
		if !ok {
			c.fail(doc, path+"/enum", "enum must be an array")
			return tUnknown
		}
		ms := make([]*tsType, 0, len(vals))
		for i, e := range vals {
			ms = append(ms, c.literal(doc, e, depth+1, path+"/enum/"+strconv.Itoa(i)))
		}
		parts = append(parts, union(ms))
	} else if t := c.typed(doc, s, depth, path); t != nil {
		parts = append(parts, t)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if v, ok := s[kw]; ok {
			subs := c.subschemas(doc, kw, v, depth, bare, path)
			parts = append(parts, union(subs))
		}
	}
	if v, ok := s["allOf"]; ok {
		parts = append(parts, c.subschemas(doc, "allOf", v, depth, bare, path)...)
	}
	t := intersection(parts)
	if nb, _ := s["nullable"].(bool); nb {
		t = union([]*tsType{t, tNull})
	}
	return t
}

func (c *converter) subschemas(doc *document, kw string, v any, depth int, bare bool, path string) []*tsType {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		c.fail(doc, path+"/"+kw, "%s must be a non-empty array of schemas", kw)
		return nil
	}
	out := make([]*tsType, 0, len(arr))
	for i, sub := range arr {
		out = append(out, c.conv(doc, sub, depth+1, bare, path+"/"+kw+"/"+strconv.Itoa(i)))
	}
	return out
}

// typed converts the type-specific keywords of s, or returns nil when s
// constrains no type.
func (c *converter) typed(doc *document, s map[string]any, depth int, path string) *tsType {
	var names []string
	switch v := s["type"].(type) {
	case nil:
		if _, ok := s["type"]; ok {
			c.fail(doc, path+"/type", "type must be a string or an array of strings")
			return nil
		}
		switch {
		case has(s, "properties", "additionalProperties", "patternProperties"):
			names = []string{"object"}
		case has(s, "items", "prefixItems"):
			names = []string{"array"}
		default:
			return nil
		}
	case string:
		names = []string{v}
	case []any:
		if len(v) == 0 {
			c.fail(doc, path+"/type", "type must not be an empty array")
			return nil
		}
		for _, e := range v {
			n, ok := e.(string)
			if !ok {
				c.fail(doc, path+"/type", "type must be a string or an array of strings")
				return nil
			}
			names = append(names, n)
		}
	default:
		c.fail(doc, path+"/type", "type must be a string or an array of strings")
		return nil
	}
	ms := make([]*tsType, 0, len(names))
	for _, n := range names {
		switch n {
		case "string":
			ms = append(ms, tString)
		case "number", "integer":
			ms = append(ms, tNumber)
		case "boolean":
			ms = append(ms, tBoolean)
		case "null":
			ms = append(ms, tNull)
		case "object":
			ms = append(ms, c.object(doc, s, depth, path))
		case "array":
			ms = append(ms, c.array(doc, s, depth, path))
		default:
			c.fail(doc, path+"/type", "unknown type %q: use string, number, integer, boolean, null, object or array", n)
			return nil
		}
	}
	return union(ms)
}

func has(s map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

func (c *converter) object(doc *document, s map[string]any, depth int, path string) *tsType {
	obj := &tsType{kind: kindObject}
	var props map[string]any
	if v, ok := s["properties"]; ok {
		if props, ok = v.(map[string]any); !ok {
			c.fail(doc, path+"/properties", "properties must be an object")
			return tUnknown
		}
	}
	required := map[string]bool{}
	var extraRequired []string
	if v, ok := s["required"]; ok {
		arr, ok := v.([]any)
		if !ok {
			c.fail(doc, path+"/required", "required must be an array of strings")
			return tUnknown
		}
		for _, e := range arr {
			n, ok := e.(string)
			if !ok {
				c.fail(doc, path+"/required", "required must be an array of strings")
				return tUnknown
			}
			if !required[n] {
				required[n] = true
				if _, ok := props[n]; !ok {
					extraRequired = append(extraRequired, n)
				}
			}
		}
	}

	// Index signature: additionalProperties and patternProperties.
	var index []*tsType
	var indexDoc []string
	open := true
	ap, hasAP := s["additionalProperties"]
	var apType *tsType
	if hasAP {
		switch v := ap.(type) {
		case bool:
			open = v
		default:
			open = false
			apType = c.conv(doc, v, depth+1, false, path+"/additionalProperties")
			index = append(index, apType)
		}
	}
	if v, ok := s["patternProperties"]; ok {
		pp, ok := v.(map[string]any)
		if !ok {
			c.fail(doc, path+"/patternProperties", "patternProperties must be an object")
			return tUnknown
		}
		for _, pat := range slices.Sorted(maps.Keys(pp)) {
			index = append(index, c.conv(doc, pp[pat], depth+1, false, path+"/patternProperties/"+escapeToken(pat)))
			if c.docs {
				indexDoc = append(indexDoc, oneLine("Keys matching /"+pat+"/."))
			}
		}
	}

	anyOptional := false
	for _, name := range slices.Sorted(maps.Keys(props)) {
		sub := props[name]
		p := prop{
			name:     name,
			optional: !required[name],
			typ:      c.conv(doc, sub, depth+1, false, path+"/properties/"+escapeToken(name)),
		}
		if c.docs {
			p.doc = c.schemaDoc(sub)
		}
		anyOptional = anyOptional || p.optional
		obj.props = append(obj.props, p)
	}
	for _, name := range extraRequired {
		t := tUnknown
		if apType != nil {
			t = apType
		}
		obj.props = append(obj.props, prop{name: name, typ: t})
	}

	switch {
	case open && len(obj.props) == 0:
		obj.index = tUnknown
	case open:
		// Left without an index signature: see the package documentation.
	case len(index) > 0:
		ms := index
		if len(obj.props) > 0 {
			ms = append([]*tsType(nil), index...)
			for _, p := range obj.props {
				ms = append(ms, p.typ)
			}
			if anyOptional {
				ms = append(ms, &tsType{kind: kindPrim, text: "undefined"})
			}
		}
		obj.index = union(ms)
		obj.indexDoc = indexDoc
	case len(obj.props) == 0:
		obj.index = tNever
	}
	return obj
}

func (c *converter) array(doc *document, s map[string]any, depth int, path string) *tsType {
	items, hasItems := s["items"]
	var prefix []any
	var restKW string
	var rest any
	hasRest := false
	if v, ok := s["prefixItems"]; ok {
		arr, ok := v.([]any)
		if !ok {
			c.fail(doc, path+"/prefixItems", "prefixItems must be an array of schemas")
			return tUnknown
		}
		prefix, restKW, rest, hasRest = arr, "items", items, hasItems
	} else if arr, ok := items.([]any); ok {
		ai, hasAI := s["additionalItems"]
		prefix, restKW, rest, hasRest = arr, "additionalItems", ai, hasAI
	} else {
		if !hasItems {
			return &tsType{kind: kindArray, elem: tUnknown}
		}
		return &tsType{kind: kindArray, elem: c.conv(doc, items, depth+1, false, path+"/items")}
	}
	tu := &tsType{kind: kindTuple}
	for i, e := range prefix {
		tu.elems = append(tu.elems, c.conv(doc, e, depth+1, false, path+"/"+prefixKW(restKW)+"/"+strconv.Itoa(i)))
	}
	tu.optFrom = 0
	if n, ok := s["minItems"].(json.Number); ok {
		if f, err := n.Float64(); err == nil && f > 0 {
			tu.optFrom = int(math.Min(f, float64(len(tu.elems))))
		}
	}
	switch {
	case !hasRest:
		tu.rest = tUnknown
	case rest == false:
		tu.rest = nil
	default:
		tu.rest = c.conv(doc, rest, depth+1, false, path+"/"+restKW)
		if tu.rest == tNever {
			tu.rest = nil
		}
	}
	return tu
}

func prefixKW(restKW string) string {
	if restKW == "items" {
		return "prefixItems"
	}
	return "items"
}

// literal converts a JSON value into a literal type.
func (c *converter) literal(doc *document, v any, depth int, path string) *tsType {
	if c.err != nil {
		return tUnknown
	}
	if depth > c.maxDepth {
		c.err = fmt.Errorf("%s at %s: %w: literal value nests more than %d levels",
			doc.what, pointerText(path), ErrTooDeep, c.maxDepth)
		return tUnknown
	}
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return &tsType{kind: kindLit, text: strconv.FormatBool(x)}
	case json.Number:
		return &tsType{kind: kindLit, text: numberLiteral(x)}
	case string:
		return &tsType{kind: kindLit, text: quote(x)}
	case []any:
		tu := &tsType{kind: kindTuple}
		for i, e := range x {
			tu.elems = append(tu.elems, c.literal(doc, e, depth+1, path+"/"+strconv.Itoa(i)))
		}
		tu.optFrom = len(tu.elems)
		return tu
	case map[string]any:
		obj := &tsType{kind: kindObject}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			obj.props = append(obj.props, prop{name: k, typ: c.literal(doc, x[k], depth+1, path+"/"+escapeToken(k))})
		}
		if len(obj.props) == 0 {
			obj.index = tNever
		}
		return obj
	}
	return tUnknown
}

// numberLiteral renders a JSON number as a TypeScript numeric literal type.
// Numbers outside the float64 range have no literal type and become number.
func numberLiteral(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return "number"
	}
	return string(n)
}

// ref returns the type a local reference names.
func (c *converter) ref(doc *document, r string, bare bool) *tsType {
	if !strings.HasPrefix(r, "#") {
		return tUnknown
	}
	ptr, err := url.PathUnescape(r[1:])
	if err != nil || (ptr != "" && ptr[0] != '/') {
		return tUnknown
	}
	d, ok := doc.refs[ptr]
	if !ok {
		node, last, found := resolve(doc.root, ptr)
		if !found {
			return tUnknown
		}
		d = &decl{name: c.names.alloc(doc.base + pascal(last, "Def"))}
		doc.refs[ptr] = d
		c.decls = append(c.decls, d)
		c.queue = append(c.queue, pending{doc: doc, node: node, d: d, path: ptr})
	}
	t := &tsType{kind: kindRef, ref: d}
	if bare {
		c.cur.bare = append(c.cur.bare, t)
	}
	return t
}

// resolve follows a JSON pointer from root. It returns the node and the
// pointer's last token.
func resolve(root any, ptr string) (node any, last string, ok bool) {
	node = root
	if ptr == "" {
		return node, "", true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			v, ok := n[tok]
			if !ok {
				return nil, "", false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) || (len(tok) > 1 && tok[0] == '0') {
				return nil, "", false
			}
			node = n[i]
		default:
			return nil, "", false
		}
		last = tok
	}
	return node, last, true
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}
