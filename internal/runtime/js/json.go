package js

import (
	"errors"
	"fmt"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/jsonval"
)

// JSON.parse and JSON.stringify recurse once per level of nesting, in Go:
// goja's own recurse without bound (JSON.parse of millions of brackets,
// JSON.stringify of an object nested in a loop, a reviver that grows the
// value it walks) and overflow the Go stack, which kills the process.
// ptc's versions keep the semantics of the specification — reviver,
// replacer function or property list, indentation, toJSON, wrapper
// objects, cycles (TypeError), BigInt (TypeError) — and throw a catchable
// RangeError past maxJSONDepth levels. JSON.parse checks the nesting of
// the text as it parses it. JSON.parse (jsonvalue.go), the reviver
// walk and JSON.stringify are ptc's own: goja's JSON.parse goes through
// encoding/json, which turns unpaired surrogate escapes into U+FFFD and
// refuses 1e400 with Go's own error text. The engine converts tool
// arguments, tool results, the input and the result the same way.

// guardJSON replaces JSON.parse and JSON.stringify.
func (x *exec) guardJSON() {
	obj, ok := x.vm.Get("JSON").(*goja.Object)
	if !ok {
		return
	}
	x.rawJSONParse = x.method(obj, "parse", func(call goja.FunctionCall, _ func(goja.FunctionCall) goja.Value) goja.Value {
		text, _ := call.Argument(0).ToString().(goja.String)
		if text == nil {
			text = goja.StringFromUTF16(nil)
		}
		v := x.parseText(text)
		reviver, ok := goja.AssertFunction(call.Argument(1))
		if !ok {
			return v
		}
		root := x.vm.NewObject()
		_ = root.Set("", v)
		return x.revive(reviver, root, jsonKey{}, 0)
	})
	x.method(obj, "stringify", func(call goja.FunctionCall, _ func(goja.FunctionCall) goja.Value) goja.Value {
		return x.stringifyJS(call.Argument(0), call.Argument(1), call.Argument(2))
	})
}

// revive is InternalizeJSONProperty: it walks holder[name] depth first,
// calling reviver on every property, bounded to maxJSONDepth levels (the
// reviver may add deeper values as it goes).
func (x *exec) revive(reviver goja.Callable, holder *goja.Object, name jsonKey, depth int) goja.Value {
	val := x.getKey(holder, name)
	if obj, ok := val.(*goja.Object); ok {
		if depth >= maxJSONDepth {
			x.throwRange(fmt.Sprintf("JSON.parse: the reviver reached a value nested more than %d levels deep", maxJSONDepth))
		}
		var keys []jsonKey
		if x.isArray(goja.FunctionCall{Arguments: []goja.Value{obj}}).ToBoolean() {
			n := lengthOf(obj)
			for i := 0.0; i < n; i++ {
				keys = append(keys, jsonKey{s: ftoa(i)})
			}
		} else {
			keys = x.ownKeys(obj)
		}
		for _, k := range keys {
			v := x.revive(reviver, obj, k, depth+1)
			if goja.IsUndefined(v) {
				x.deleteKey(obj, k)
			} else {
				x.defineKey(obj, k, v)
			}
		}
	}
	res, err := reviver(holder, name.value(x.vm), val)
	if err != nil {
		rethrow(err)
	}
	return res
}

// parseText is JSON.parse(text) without a reviver: a SyntaxError for
// text that is not JSON, a RangeError for text nested too deep.
func (x *exec) parseText(text goja.String) goja.Value {
	data, wtf := jsonText(text)
	v, err := decodeJSON(x.vm, x, data, wtf, nil)
	if errors.Is(err, jsonval.ErrTooDeep) {
		x.throwRange(fmt.Sprintf("JSON.parse: the text nests more than %d levels deep", maxJSONDepth))
	}
	if err != nil {
		panic(x.intrinsicError(x.jsonSyntaxError, "JSON.parse: "+err.Error()))
	}
	return v
}

// jsonSyntaxError returns an intrinsic SyntaxError, made by goja's own
// JSON.parse on text that is not JSON; nil if JSON.parse is not guarded
// (the engine's own conversions parse text that is JSON).
func (x *exec) jsonSyntaxError() goja.Value {
	if x.rawJSONParse == nil {
		return nil
	}
	return x.rawJSONParse(goja.FunctionCall{Arguments: []goja.Value{x.vm.ToValue("{")}})
}

// parseJSON is JSON.parse(text) for the engine (no reviver), with the
// nesting checked first; a failure is returned as an error.
func (x *exec) parseJSON(text string) (v goja.Value, err error) {
	if ex := x.vm.Try(func() { v = x.parseText(x.vm.ToValue(text).(goja.String)) }); ex != nil {
		return nil, ex
	}
	return v, nil
}
