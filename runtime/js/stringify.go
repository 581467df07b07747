package js

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// jsonState is one JSON.stringify.
type jsonState struct {
	x        *exec
	replacer goja.Callable
	props    []string // property list; nil means all enumerable keys
	gap      string
	stack    map[*goja.Object]bool
	depth    int
	b        []byte
	max      int // the longest output allowed
}

// stringifyJS is JSON.stringify(value, replacer, space): a string, or
// undefined. Exceptions from getters, toJSON and the replacer propagate.
func (x *exec) stringifyJS(value, replacer, space goja.Value) goja.Value {
	if value == nil {
		value = goja.Undefined()
	}
	st := &jsonState{x: x, stack: map[*goja.Object]bool{}, max: int(x.maxStringChars())}
	if r, ok := replacer.(*goja.Object); ok {
		if fn, ok := goja.AssertFunction(r); ok {
			st.replacer = fn
		} else if x.isArray(goja.FunctionCall{Arguments: []goja.Value{r}}).ToBoolean() {
			st.props = x.propertyList(r)
		}
	}
	st.gap = x.gap(space)
	holder := x.vm.NewObject()
	_ = holder.Set("", value)
	if !st.property(holder, "") {
		return goja.Undefined()
	}
	return x.vm.ToValue(string(st.b))
}

// stringify serialises v as the engine does for tool arguments and
// results: JSON.stringify(v), with a JS exception returned as an error.
// Uncatchable errors (interrupts) come back as errors too.
func (x *exec) stringify(v goja.Value) (res goja.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && isUncatchable(e) {
				err = e
				return
			}
			panic(r)
		}
	}()
	if ex := x.vm.Try(func() { res = x.stringifyJS(v, nil, nil) }); ex != nil {
		return nil, ex
	}
	return res, nil
}

// propertyList is the property list of an array replacer: its string and
// number elements (and String and Number objects), without repeats.
func (x *exec) propertyList(r *goja.Object) []string {
	n := lengthOf(r)
	seen := map[string]bool{}
	list := []string{}
	for i := 0.0; i < n; i++ {
		v := r.Get(ftoa(i))
		var item string
		switch t := v.(type) {
		case goja.String:
			item = t.String()
		case *goja.Object:
			c := t.ClassName()
			if c != "String" && c != "Number" {
				continue
			}
			item = t.ToString().String()
		default:
			if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
				continue
			}
			if _, ok := v.Export().(bool); ok {
				continue
			}
			if _, isNum := numberOf(v); !isNum {
				continue
			}
			item = v.String()
		}
		if !seen[item] {
			seen[item] = true
			list = append(list, item)
		}
	}
	return list
}

// gap is the indentation unit of a space argument.
func (x *exec) gap(space goja.Value) string {
	if obj, ok := space.(*goja.Object); ok {
		switch obj.ClassName() {
		case "Number":
			space = x.vm.ToValue(obj.ToNumber().ToFloat())
		case "String":
			space = obj.ToString()
		}
	}
	if f, ok := numberOf(space); ok {
		n := math.Min(10, toInteger(f))
		if n < 1 {
			return ""
		}
		return strings.Repeat(" ", int(n))
	}
	if s, ok := space.(goja.String); ok {
		if s.Length() > 10 {
			s = s.Substring(0, 10)
		}
		return s.String()
	}
	return ""
}

// numberOf returns v's value if v is a number primitive.
func numberOf(v goja.Value) (float64, bool) {
	if _, isObj := v.(*goja.Object); v == nil || isObj {
		return 0, false
	}
	switch n := v.Export().(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// property is SerializeJSONProperty: it appends holder[key] and reports
// whether it had a JSON representation.
func (st *jsonState) property(holder *goja.Object, key string) bool {
	x := st.x
	value := holder.Get(key)
	if value == nil {
		value = goja.Undefined()
	}
	keyVal := x.vm.ToValue(key)
	if obj, ok := value.(*goja.Object); ok {
		value = st.toJSON(obj, value, keyVal)
	} else if _, ok := value.Export().(interface{ BitLen() int }); ok { // BigInt: BigInt.prototype.toJSON
		value = st.toJSON(value.ToObject(x.vm), value, keyVal)
	}
	if st.replacer != nil {
		v, err := st.replacer(holder, keyVal, value)
		if err != nil {
			rethrow(err)
		}
		value = v
	}
	if obj, ok := value.(*goja.Object); ok {
		switch obj.ClassName() {
		case "Number":
			value = obj.ToNumber()
		case "String":
			value = obj.ToString()
		case "Boolean", "BigInt":
			value = x.vm.ToValue(obj.Export())
		}
	}
	switch {
	case value == nil || goja.IsUndefined(value):
		return false
	case goja.IsNull(value):
		st.str("null")
		return true
	}
	switch v := value.(type) {
	case goja.String:
		st.quote(v)
		return true
	case *goja.Object:
		if _, ok := goja.AssertFunction(v); ok {
			return false
		}
		st.object(v)
		return true
	}
	switch e := value.Export().(type) {
	case bool:
		if e {
			st.str("true")
		} else {
			st.str("false")
		}
		return true
	case int64:
		st.str(strconv.FormatInt(e, 10))
		return true
	case float64:
		if math.IsNaN(e) || math.IsInf(e, 0) {
			st.str("null")
		} else {
			st.str(value.String())
		}
		return true
	case interface{ BitLen() int }:
		panic(x.vm.NewTypeError("Do not know how to serialize a BigInt"))
	}
	return false // symbols
}

// toJSON applies obj's toJSON method, if it has one, to value.
func (st *jsonState) toJSON(obj *goja.Object, value, key goja.Value) goja.Value {
	if fn, ok := goja.AssertFunction(obj.Get("toJSON")); ok {
		v, err := fn(value, key)
		if err != nil {
			rethrow(err)
		}
		return v
	}
	return value
}

// object serialises an object or array, guarding against cycles and
// nesting deeper than MaxJSONDepth.
func (st *jsonState) object(obj *goja.Object) {
	x := st.x
	if st.stack[obj] {
		panic(x.vm.NewTypeError("Converting circular structure to JSON"))
	}
	if st.depth >= MaxJSONDepth {
		x.throwRange(fmt.Sprintf("JSON.stringify: the value nests more than %d levels deep", MaxJSONDepth))
	}
	st.stack[obj] = true
	st.depth++
	defer func() {
		delete(st.stack, obj)
		st.depth--
	}()
	if x.isArray(goja.FunctionCall{Arguments: []goja.Value{obj}}).ToBoolean() {
		n := lengthOf(obj)
		if n == 0 {
			st.str("[]")
			return
		}
		st.byte('[')
		for i := 0.0; i < n; i++ {
			if i > 0 {
				st.byte(',')
			}
			st.newline()
			if !st.property(obj, ftoa(i)) {
				st.str("null")
			}
		}
		st.close(']')
		return
	}
	keys := st.props
	if keys == nil {
		keys = obj.Keys()
	}
	st.byte('{')
	empty := true
	for _, k := range keys {
		mark := len(st.b)
		if !empty {
			st.byte(',')
		}
		st.newline()
		st.quote(x.vm.ToValue(k).(goja.String))
		st.byte(':')
		if st.gap != "" {
			st.byte(' ')
		}
		if st.property(obj, k) {
			empty = false
			continue
		}
		// Roll back the key of a value without a JSON representation.
		st.b = st.b[:mark]
	}
	if empty {
		st.byte('}')
		return
	}
	st.close('}')
}

func (st *jsonState) str(s string) { st.b = append(st.b, s...) }

func (st *jsonState) byte(c byte) { st.b = append(st.b, c) }

// newline starts a line indented to the current depth.
func (st *jsonState) newline() { st.indentTo(st.depth) }

// close ends an object or array on its own line.
func (st *jsonState) close(c byte) {
	st.indentTo(st.depth - 1)
	st.byte(c)
}

func (st *jsonState) indentTo(depth int) {
	if st.gap == "" {
		return
	}
	st.byte('\n')
	for i := 0; i < depth; i++ {
		st.str(st.gap)
	}
	st.checkSize()
}

// checkSize throws when the output grows past what the memory limit
// allows (indentation makes it quadratic in the depth).
func (st *jsonState) checkSize() {
	if len(st.b) > st.max {
		st.x.checkChars("JSON.stringify", float64(len(st.b)))
	}
}

const hexDigits = "0123456789abcdef"

// quote is QuoteJSONString: escapes, and lone surrogates as \uXXXX.
func (st *jsonState) quote(s goja.String) {
	b := append(st.b, '"')
	r := s.Reader()
	for {
		c, _, err := r.ReadRune()
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case err != nil: // a lone surrogate
			b = append(b, '\\', 'u', hexDigits[c>>12&0xf], hexDigits[c>>8&0xf], hexDigits[c>>4&0xf], hexDigits[c&0xf])
		case c == '"' || c == '\\':
			b = append(b, '\\', byte(c))
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, byte(c))
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	st.b = append(b, '"')
	st.checkSize()
}
