package js

import "github.com/dop251/goja"

// guardBigIntAlloc guards BigInt.asUintN and BigInt.asIntN, whose
// results goja allocates in one step from the bit count: a negative
// BigInt made 2**53 - 1 bits wide asks Go for a slice no slice can be,
// and Go panics ("makeslice: len out of range"). Through the guard that
// becomes a catchable RangeError (rethrowBuiltin).
func (x *exec) guardBigIntAlloc() {
	b, ok := x.vm.Get("BigInt").(*goja.Object)
	if !ok {
		return
	}
	for _, name := range []string{"asUintN", "asIntN"} {
		x.method(b, name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			return orig(call)
		})
	}
}
