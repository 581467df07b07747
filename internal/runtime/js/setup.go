package js

import (
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime"
)

// newRuntime makes the execution's runtime with everything that does not
// depend on the job. The guards come with the program's groups (lazy.go),
// those of every program that reaches a built-in (groupBase: the
// recursion and Function constructors' guards, guardBase) included.
func (x *exec) newRuntime() {
	vm := goja.New()
	// eval and the Function constructors parse with these options.
	vm.SetParserOptions(parserOptions...)
	vm.SetMaxCallStackSize(x.e.maxStack)
	x.vm = vm
	// input is the first global a runtime adds, null until setup sets the
	// job's: the first new global costs goja a copy of its globals' names,
	// which a runtime made ahead then pays ahead.
	_ = vm.GlobalObject().Set("input", goja.Null())
	x.countValueBuiltins()
}

// guardBase installs groupBase: the guards of every program that can
// reach a built-in's method or constructor (lazy.go). It first takes
// what the guards use from the intrinsics as goja made them.
func (x *exec) guardBase() {
	// Sized for the stand-ins the Engine's runtimes made so far: a map
	// grown entry by entry rehashes several times over a few hundred.
	n := int(x.e.standIns.Load())
	x.wrappers, x.standIns = make(map[*goja.Object]*goja.Object, n), make(map[*goja.Object]*goja.Object, n)
	x.bound, x.proxies = map[*goja.Object]int{}, map[*goja.Object]int{}
	x.objectIntrinsics()
	if fn, ok := x.vm.Get("Function").(*goja.Object); ok {
		if proto, ok := fn.Get("prototype").(*goja.Object); ok {
			x.hasInstance, _ = proto.GetSymbol(goja.SymHasInstance).(*goja.Object)
			if x.hasInstance != nil {
				x.rawHasInstance, _ = x.hasInstance.Export().(func(goja.FunctionCall) goja.Value)
			}
		}
	}
	x.arrayIntrinsics()
	x.guardFunction()
	x.guardRecursion()
	// AsyncFunction, which any async function reaches through its
	// prototype (the script's own main included).
	if fn, err := x.vm.RunProgram(asyncProgram); err == nil {
		x.guardAsyncFunction(fn)
	}
}

// arrayIntrinsics takes Array.isArray and an intrinsic RangeError maker
// from the Array constructor, once: when groupBase is installed, before
// the script runs, or when first needed by a program without it, which
// cannot name Array or reach the global object, so finds them as goja
// made them.
func (x *exec) arrayIntrinsics() {
	if x.arrayTaken {
		return
	}
	x.arrayTaken = true
	vm := x.vm
	array, ok := vm.Get("Array").(*goja.Object)
	if !ok {
		return
	}
	if f, ok := array.Get("isArray").(*goja.Object); ok {
		x.rawIsArray, _ = f.Export().(func(goja.FunctionCall) goja.Value)
	}
	// An intrinsic RangeError, for the guards' own errors: the one the
	// Array constructor throws for a negative length.
	if ctor, ok := goja.AssertConstructor(array); ok {
		x.rawRangeError = func() goja.Value {
			_, err := ctor(nil, vm.ToValue(-1))
			if ex, ok := err.(*goja.Exception); ok {
				return ex.Value()
			}
			return nil
		}
	}
}

// objectIntrinsics takes goja's own Object functions the guards and the
// JSON conversions use, once, as arrayIntrinsics does Array's.
func (x *exec) objectIntrinsics() {
	if x.objectTaken {
		return
	}
	x.objectTaken = true
	if object, ok := x.vm.Get("Object").(*goja.Object); ok {
		x.rawOwnDescriptor = rawFunc(object.Get("getOwnPropertyDescriptor"))
		x.rawOwnSymbols = rawFunc(object.Get("getOwnPropertySymbols"))
		x.rawObjectKeys = rawFunc(object.Get("keys"))
		x.rawDefine = rawFunc(object.Get("defineProperty"))
	}
}

// isArray is Array.isArray: goja's own (arrayIntrinsics) for a proxy,
// which it sees through (and throws for when revoked), and what it
// checks, the object's class, for any other value.
func (x *exec) isArray(call goja.FunctionCall) goja.Value {
	obj, ok := call.Argument(0).(*goja.Object)
	if !ok {
		return x.vm.ToValue(false)
	}
	if obj.ExportType() != proxyType {
		return x.vm.ToValue(obj.ClassName() == "Array")
	}
	x.arrayIntrinsics()
	if x.rawIsArray == nil {
		return x.vm.ToValue(false)
	}
	return x.rawIsArray(call)
}

// proxyType is what goja exports a Proxy as.
var proxyType = reflect.TypeOf(goja.Proxy{})

// setup makes the runtime, unless it was made ahead (Warm), and binds the
// job's determinism, input, tools and console, and the guards the program
// needs.
func (x *exec) setup() *fault.Error {
	if x.vm == nil {
		x.newRuntime()
	}
	vm := x.vm
	if x.job.Deterministic {
		rng := rand.New(rand.NewPCG(x.job.Seed, x.job.Seed^0x9e3779b97f4a7c15))
		vm.SetRandSource(rng.Float64)
		now := x.job.ClockStart
		vm.SetTimeSource(func() time.Time {
			t := now
			now = now.Add(runtime.VirtualClockStep)
			return t
		})
	}

	input := goja.Null()
	x.inputNull = len(x.job.Input) == 0 || string(x.job.Input) == "null"
	if len(x.job.Input) > 0 {
		v, err := x.fromJSON(x.job.Input)
		if err != nil {
			return fault.New(fault.KindInternal, "input is not valid JSON")
		}
		input = v
	}
	g := vm.GlobalObject()
	_ = g.Set("input", input)
	if x.c.dispose {
		sym := vm.Get("Symbol").ToObject(vm)
		for _, name := range []string{"dispose", "asyncDispose"} {
			if v := sym.Get(name); v == nil || goja.IsUndefined(v) {
				_ = sym.Set(name, goja.NewSymbol("Symbol."+name))
			}
		}
	}
	// tools and console come with the program's groups (lazy.go).
	x.install(x.c.groups)
	// GeneratorFunction is reached through a generator function's
	// constructor, a property: only by a program with groupBase.
	if x.c.generators && x.installed&groupBase != 0 {
		x.guardGeneratorFunction()
	}
	return nil
}

// lazyGlobal defines a global that is built on first use (most scripts
// touch only some of them). It is read-only: a script that wants another
// `tools` declares its own binding.
func (x *exec) lazyGlobal(g *goja.Object, name string, build func() goja.Value) {
	getter := x.native("get "+name, 0, func(goja.FunctionCall) goja.Value {
		v := build()
		_ = g.DefineDataProperty(name, v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		return v
	})
	_ = g.DefineAccessorProperty(name, getter, nil, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// rangeError returns the intrinsic RangeError maker (arrayIntrinsics).
func (x *exec) rangeError() func() goja.Value {
	x.arrayIntrinsics()
	return x.rawRangeError
}
