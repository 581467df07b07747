package js

import (
	"fmt"
	"math"

	"github.com/dop251/goja"
)

// guardBuiltins puts size guards on string built-ins that allocate in one
// native step (and so cannot be interrupted): an oversized request throws
// a catchable RangeError instead of exhausting memory.
func (x *exec) guardBuiltins() {
	vm := x.vm
	maxChars := x.maxStringChars()
	strProto := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	guard := func(method string, size func(this goja.Value, args []goja.Value) float64) {
		orig, ok := goja.AssertFunction(strProto.Get(method))
		if !ok {
			return
		}
		fn := vm.ToValue(func(call goja.FunctionCall) goja.Value {
			if n := size(call.This, call.Arguments); n > float64(maxChars) {
				panic(x.rangeError(fmt.Sprintf("String.prototype.%s would build a string of %.0f characters, more than the %d the memory limit allows", method, n, maxChars)))
			}
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err)
			}
			return v
		})
		_ = strProto.DefineDataProperty(method, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	thisLen := func(this goja.Value) float64 {
		if s, ok := this.Export().(string); ok {
			return float64(len(s))
		}
		return 0
	}
	guard("repeat", func(this goja.Value, args []goja.Value) float64 {
		if len(args) == 0 {
			return 0
		}
		n := args[0].ToFloat()
		if math.IsNaN(n) || n < 0 {
			return 0
		}
		return thisLen(this) * n
	})
	pad := func(this goja.Value, args []goja.Value) float64 {
		if len(args) == 0 {
			return 0
		}
		return args[0].ToFloat()
	}
	guard("padStart", pad)
	guard("padEnd", pad)
}

// maxStringChars is the largest string a guarded built-in may build: half
// the memory limit (strings may take two bytes a character), at most 256 Mi.
func (x *exec) maxStringChars() int64 {
	const hard = 256 << 20
	m := x.job.Limits.MemoryBytes / 2
	if m <= 0 || m > hard {
		m = hard
	}
	return m
}

func (x *exec) rangeError(msg string) goja.Value {
	obj, err := x.vm.New(x.vm.Get("RangeError"), x.vm.ToValue(msg))
	if err != nil {
		return x.vm.ToValue(msg)
	}
	return obj
}
