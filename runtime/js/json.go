package js

import (
	"errors"
	"fmt"

	"github.com/dop251/goja"
)

// JSON.parse and JSON.stringify recurse once per level of nesting, in Go:
// goja's own recurse without bound (JSON.parse of millions of brackets,
// JSON.stringify of an object nested in a loop, a reviver that grows the
// value it walks) and overflow the Go stack, which kills the process.
// ptc's versions keep the semantics of the specification — reviver,
// replacer function or property list, indentation, toJSON, wrapper
// objects, cycles (TypeError), BigInt (TypeError) — and throw a catchable
// RangeError past maxJSONDepth levels. JSON.parse checks the nesting of
// the text before goja's parser sees it; the reviver walk and
// JSON.stringify are ptc's own. The engine serialises tool arguments and
// results the same way.

// guardJSON replaces JSON.parse and JSON.stringify.
func (x *exec) guardJSON() {
	obj, ok := x.vm.Get("JSON").(*goja.Object)
	if !ok {
		return
	}
	x.rawJSONParse = x.method(obj, "parse", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		text := call.Argument(0).ToString()
		x.checkJSONDepth(text.String())
		v := orig(goja.FunctionCall{This: call.This, Arguments: []goja.Value{text}})
		reviver, ok := goja.AssertFunction(call.Argument(1))
		if !ok {
			return v
		}
		root := x.vm.NewObject()
		_ = root.Set("", v)
		return x.revive(reviver, root, "", 0)
	})
	x.method(obj, "stringify", func(call goja.FunctionCall, _ func(goja.FunctionCall) goja.Value) goja.Value {
		return x.stringifyJS(call.Argument(0), call.Argument(1), call.Argument(2))
	})
}

// checkJSONDepth throws a RangeError if text nests more than maxJSONDepth
// levels. JSON has no lexical ambiguity: brackets outside strings are
// nesting.
func (x *exec) checkJSONDepth(text string) {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			if depth++; depth > maxJSONDepth {
				x.throwRange(fmt.Sprintf("JSON.parse: the text nests more than %d levels deep", maxJSONDepth))
			}
		case ']', '}':
			depth--
		}
	}
}

// revive is InternalizeJSONProperty: it walks holder[name] depth first,
// calling reviver on every property, bounded to maxJSONDepth levels (the
// reviver may add deeper values as it goes).
func (x *exec) revive(reviver goja.Callable, holder *goja.Object, name string, depth int) goja.Value {
	val := holder.Get(name)
	if val == nil {
		val = goja.Undefined()
	}
	if obj, ok := val.(*goja.Object); ok {
		if depth >= maxJSONDepth {
			x.throwRange(fmt.Sprintf("JSON.parse: the reviver reached a value nested more than %d levels deep", maxJSONDepth))
		}
		var keys []string
		if x.isArray(goja.FunctionCall{Arguments: []goja.Value{obj}}).ToBoolean() {
			n := lengthOf(obj)
			for i := 0.0; i < n; i++ {
				keys = append(keys, ftoa(i))
			}
		} else {
			keys = obj.Keys()
		}
		for _, k := range keys {
			v := x.revive(reviver, obj, k, depth+1)
			if goja.IsUndefined(v) {
				_ = obj.Delete(k)
			} else {
				_ = obj.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
			}
		}
	}
	res, err := reviver(holder, x.vm.ToValue(name), val)
	if err != nil {
		rethrow(err)
	}
	return res
}

// parseJSON is JSON.parse(text) for the engine (no reviver), with the
// nesting checked first; a failure is returned as an error.
func (x *exec) parseJSON(text string) (v goja.Value, err error) {
	parse := x.rawJSONParse
	if parse == nil {
		if obj, ok := x.vm.Get("JSON").(*goja.Object); ok {
			if f, ok := obj.Get("parse").(*goja.Object); ok {
				parse, _ = f.Export().(func(goja.FunctionCall) goja.Value)
			}
		}
	}
	if parse == nil {
		return nil, errors.New("JSON.parse is unavailable")
	}
	if ex := x.vm.Try(func() {
		x.checkJSONDepth(text)
		v = parse(goja.FunctionCall{Arguments: []goja.Value{x.vm.ToValue(text)}})
	}); ex != nil {
		return nil, ex
	}
	return v, nil
}
