package js

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// jsonState is one JSON.stringify.
type jsonState struct {
	x        *exec
	replacer goja.Callable
	props    []jsonKey // property list; nil means all enumerable keys
	gap      string
	stack    []*goja.Object // the objects being serialised, outermost first
	b        []byte
	max      int           // the longest output allowed
	limit    int           // a result's size limit in bytes (0: none), see room
	arg      [1]goja.Value // Array.isArray's argument, reused
	steps    int           // the elements and properties visited, see tick
}

// stringifyJS is JSON.stringify(value, replacer, space): a string, or
// undefined. Exceptions from getters, toJSON and the replacer propagate.
func (x *exec) stringifyJS(value, replacer, space goja.Value) goja.Value {
	b, ok := x.serialise(value, replacer, space, 0)
	if !ok {
		return goja.Undefined()
	}
	return x.vm.ToValue(string(b))
}

// serialise is JSON.stringify(value, replacer, space) into bytes, and
// whether value had a JSON representation. With a limit above 0 it stops
// as soon as the text would pass limit bytes, by panicking with
// outputOver (see room), so that no buffer much larger than the limit is
// ever built.
func (x *exec) serialise(value, replacer, space goja.Value, limit int) ([]byte, bool) {
	return x.serialiseInto(nil, value, replacer, space, limit)
}

// serialiseInto is serialise appending to buf (empty, its capacity a
// guess at the size of the text).
func (x *exec) serialiseInto(buf []byte, value, replacer, space goja.Value, limit int) ([]byte, bool) {
	if value == nil {
		value = goja.Undefined()
	}
	st := x.spareJSON
	if st == nil {
		st = &jsonState{}
	}
	x.spareJSON = nil
	*st = jsonState{x: x, max: int(x.maxStringChars()), limit: limit, b: buf, stack: st.stack[:0]}
	if r, ok := replacer.(*goja.Object); ok {
		if fn, ok := goja.AssertFunction(r); ok {
			st.replacer = fn
		} else if x.isArray(goja.FunctionCall{Arguments: []goja.Value{r}}).ToBoolean() {
			st.props = x.propertyList(r)
		}
	}
	st.gap = x.gap(space)
	// The holder {"": value} is visible only to a replacer function.
	var holder *goja.Object
	if st.replacer != nil {
		holder = x.vm.NewObject()
		_ = holder.Set("", value)
	}
	ok := st.value(holder, jsonKey{}, value)
	b := st.b
	x.keepJSON(st)
	if !ok {
		return nil, false
	}
	return b, true
}

// keepJSON keeps a finished serialisation's state for the next one, with
// nothing of this one left in it: the next starts from a zero state but
// for the stack's array, emptied here. A serialisation that panics (a
// script's exception, a limit) does not come here: the next makes its own.
func (x *exec) keepJSON(st *jsonState) {
	clear(st.stack[:cap(st.stack)])
	*st = jsonState{stack: st.stack[:0]}
	x.spareJSON = st
}

// outputOver stops the serialisation of a result at its size limit: at
// least n bytes of JSON, more than the limit. resultJSON recovers it.
type outputOver struct{ n int }

// memoryOver stops the serialisation of a result whose buffer would need
// n bytes, more than the execution's memory limit (which the result's
// size limit may exceed: the overflow policy truncate lets a result be
// 64 MiB whatever memory_bytes says). resultJSON recovers it.
type memoryOver struct{ n int }

func (m *memoryOver) Error() string {
	return fmt.Sprintf("the result would need %d bytes, more than the memory limit", m.n)
}

// room stops a result's serialisation (panics with outputOver) when n
// more bytes would take it past its limit, and otherwise makes room for
// them (see reserve). A string value is checked before it is appended,
// with a lower bound of its size (escapes and multi-byte characters are
// counted after); everything after, so the buffer never holds more than
// the limit plus one number, keyword, string or property name (a name is
// appended before its value is known to have a JSON representation, and
// taken back when it has none).
func (st *jsonState) room(n, reserve int) {
	if st.limit <= 0 {
		return
	}
	if len(st.b)+n > st.limit {
		panic(outputOver{n: len(st.b) + n})
	}
	st.reserve(reserve)
}

// roomSlack is what room makes ready beyond what it is told: the numbers,
// keywords and punctuation appended before the next check.
const roomSlack = 64

// reserve grows a result's buffer, when fewer than n+roomSlack bytes are
// free, to twice its size but no further than the limit (plus what the
// next append needs). append's own growth of a large slice is 1.25×,
// which leaves four times the final buffer behind as garbage on the way
// to it; doubling leaves one, and the cap at the limit keeps the last
// step from overshooting: a result of limit bytes allocates about twice
// the limit in all.
func (st *jsonState) reserve(n int) {
	n += roomSlack
	if cap(st.b)-len(st.b) >= n {
		return
	}
	c := max(2*cap(st.b), 512)
	c = min(c, st.limit+roomSlack)
	c = max(c, len(st.b)+n)
	if m := st.x.job.Limits.MemoryBytes; m > 0 && int64(c) > m {
		// The text alone would pass the memory limit: its buffer grows to
		// the limit and no further.
		if int64(len(st.b)+n) > m {
			panic(memoryOver{n: len(st.b) + n})
		}
		c = int(m)
	}
	b := make([]byte, len(st.b), c)
	copy(b, st.b)
	st.b = b
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

// argumentsBuffer is the capacity the JSON of a call's arguments starts
// with: most arguments are a few small fields, and growing from nothing
// to their size takes several allocations.
const argumentsBuffer = 64

// argumentsJSON serialises a tool call's arguments as stringify does,
// into bytes handed to the call as they are (no detour through a JS
// string): the JSON, or nil when v has no JSON representation.
func (x *exec) argumentsJSON(v goja.Value) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && isUncatchable(e) {
				err = e
				return
			}
			panic(r)
		}
	}()
	if ex := x.vm.Try(func() {
		if b, ok := x.serialiseInto(make([]byte, 0, argumentsBuffer), v, nil, nil, 0); ok {
			res = b
		}
	}); ex != nil {
		return nil, ex
	}
	return res, nil
}

// propertyList is the property list of an array replacer: its string and
// number elements (and String and Number objects), without repeats.
func (x *exec) propertyList(r *goja.Object) []jsonKey {
	n := lengthOf(r)
	x.checkScan("JSON.stringify's property list", n)
	seen := map[string]bool{}
	list := []jsonKey{}
	for i := 0.0; i < n; i++ {
		v := r.Get(ftoa(i))
		var item jsonKey
		switch t := v.(type) {
		case goja.String:
			item = exactKey(t)
		case *goja.Object:
			c := t.ClassName()
			if c != "String" && c != "Number" {
				continue
			}
			item = exactKey(t.ToString().(goja.String))
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
			item = jsonKey{s: v.String()}
		}
		if id := item.id(); !seen[id] {
			seen[id] = true
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

// property appends holder[key] (SerializeJSONProperty) and reports
// whether it had a JSON representation.
func (st *jsonState) property(holder *goja.Object, key jsonKey) bool {
	return st.value(holder, key, st.x.getKey(holder, key))
}

// value serialises value, read from holder[key] (holder is nil for the
// top-level value without a replacer).
func (st *jsonState) value(holder *goja.Object, key jsonKey, value goja.Value) bool {
	x := st.x
	if obj, ok := value.(*goja.Object); ok {
		value = st.toJSON(obj, value, key)
	} else if isBigInt(value) { // BigInt.prototype.toJSON
		value = st.toJSON(value.ToObject(x.vm), value, key)
	}
	if st.replacer != nil {
		v, err := st.replacer(holder, key.value(x.vm), value)
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
	switch v := value.(type) {
	case nil:
		return false
	case goja.String:
		// Each UTF-16 unit takes at least one byte, plus the quotes.
		// Each UTF-16 unit takes at least one byte and, but for lone
		// surrogates and control characters, at most three.
		n := v.Length() + 2
		st.room(n, 3*n)
		st.quote(v)
		st.room(0, 0)
		return true
	case *goja.Object:
		if _, ok := goja.AssertFunction(v); ok {
			return false
		}
		st.object(v)
		return true
	}
	switch value.ExportType() {
	case nil: // undefined, null
		if goja.IsNull(value) {
			st.str("null")
			st.room(0, 0)
			return true
		}
		return false
	case typeBool:
		if value.ToBoolean() {
			st.str("true")
		} else {
			st.str("false")
		}
		st.room(0, 0)
		return true
	case typeInt:
		st.b = strconv.AppendInt(st.b, value.ToInteger(), 10)
		st.room(0, 0)
		return true
	case typeFloat:
		if f := value.ToFloat(); math.IsNaN(f) || math.IsInf(f, 0) {
			st.str("null")
		} else {
			st.str(value.String())
		}
		st.room(0, 0)
		return true
	}
	if isBigInt(value) {
		panic(x.vm.NewTypeError("Do not know how to serialize a BigInt"))
	}
	return false // symbols
}

var (
	typeBool  = reflect.TypeOf(false)
	typeInt   = reflect.TypeOf(int64(0))
	typeFloat = reflect.TypeOf(0.0)
)

// isBigInt reports whether v is a BigInt primitive.
func isBigInt(v goja.Value) bool {
	if _, ok := v.(*goja.Object); ok || v == nil {
		return false
	}
	t := v.ExportType()
	return t != nil && t.Kind() == reflect.Ptr && t.Elem().Name() == "Int"
}

// toJSON applies obj's toJSON method, if it has one, to value.
func (st *jsonState) toJSON(obj *goja.Object, value goja.Value, key jsonKey) goja.Value {
	if fn, ok := goja.AssertFunction(obj.Get("toJSON")); ok {
		v, err := fn(value, key.value(st.x.vm))
		if err != nil {
			rethrow(err)
		}
		return v
	}
	return value
}

// object serialises an object or array, guarding against cycles and
// nesting deeper than maxJSONDepth.
func (st *jsonState) object(obj *goja.Object) {
	x := st.x
	for _, o := range st.stack {
		if o == obj {
			panic(x.vm.NewTypeError("Converting circular structure to JSON"))
		}
	}
	if len(st.stack) >= maxJSONDepth {
		x.throwRange(fmt.Sprintf("JSON.stringify: the value nests more than %d levels deep", maxJSONDepth))
	}
	st.stack = append(st.stack, obj)
	defer func() { st.stack = st.stack[:len(st.stack)-1] }()
	st.arg[0] = obj
	if x.isArray(goja.FunctionCall{Arguments: st.arg[:]}).ToBoolean() {
		n := lengthOf(obj)
		// Every index is visited, a sparse array's holes too.
		x.checkScan("JSON.stringify", n)
		if n == 0 {
			st.str("[]")
			st.room(0, 0)
			return
		}
		st.byte('[')
		for i := 0.0; i < n; i++ {
			st.tick()
			if i > 0 {
				st.byte(',')
			}
			st.newline()
			if !st.property(obj, jsonKey{s: ftoa(i)}) {
				st.str("null")
			}
			st.room(0, 0)
		}
		st.close(']')
		st.room(0, 0)
		return
	}
	// The keys: the property list, or the own keys, as names when they
	// are exact (see ownNames).
	keys, names := st.props, []string(nil)
	if keys == nil {
		names, keys = x.ownNames(obj)
	}
	n := len(names)
	if keys != nil {
		n = len(keys)
	}
	st.byte('{')
	empty := true
	for i := 0; i < n; i++ {
		st.tick()
		var k jsonKey
		if keys != nil {
			k = keys[i]
		} else {
			k.s = names[i]
		}
		mark := len(st.b)
		if !empty {
			st.byte(',')
		}
		st.newline()
		if st.limit > 0 {
			st.reserve(len(k.s) + 3)
		}
		if k.v != nil {
			st.quote(k.v)
		} else {
			st.quoteGo(k.s)
		}
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
		st.room(0, 0)
		return
	}
	st.close('}')
	st.room(0, 0)
}

// timeCheckSteps is how many elements and properties a serialisation
// visits between two looks at the clock.
const timeCheckSteps = 4096

// tick counts a visited element or property and, every timeCheckSteps,
// stops the serialisation when the execution has run out of time or was
// cancelled: a value whose JSON is far larger than its heap (one array
// referenced a million times) takes seconds to serialise, in native code
// the VM's interrupt does not reach. Inside a script the VM is
// interrupted as well, so that catching the RangeError does not help; a
// result's serialisation (the VM no longer running) ends with the limit
// that ran out (see result).
func (st *jsonState) tick() {
	st.checkSize()
	st.steps++
	if st.steps%timeCheckSteps != 0 {
		return
	}
	if reason := st.x.outOfTime(); reason != 0 {
		st.x.vm.Interrupt(reason)
		st.x.throwRange("JSON.stringify: the execution ran out of time")
	}
}

func (st *jsonState) str(s string) { st.b = append(st.b, s...) }

func (st *jsonState) byte(c byte) { st.b = append(st.b, c) }

// newline starts a line indented to the current depth.
func (st *jsonState) newline() { st.indentTo(len(st.stack)) }

// close ends an object or array on its own line.
func (st *jsonState) close(c byte) {
	st.indentTo(len(st.stack) - 1)
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
	// A result's text is bytes, never a JS string: reserve guards it.
	if len(st.b) > st.max && st.limit <= 0 {
		st.x.checkChars("JSON.stringify", float64(len(st.b)))
	}
}

const hexDigits = "0123456789abcdef"

// quote is QuoteJSONString: escapes, and lone surrogates as \uXXXX.
func (st *jsonState) quote(s goja.String) {
	if rv := reflect.ValueOf(s); rv.Kind() == reflect.String {
		st.quoteGo(rv.String()) // goja keeps ASCII strings as Go strings
		return
	}
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

// quoteGo quotes a Go (UTF-8) string, which has no lone surrogates.
func (st *jsonState) quoteGo(s string) {
	b := append(st.b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	st.b = append(append(b, s[start:]...), '"')
	st.checkSize()
}
