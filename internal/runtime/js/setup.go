package js

import (
	"math/rand/v2"
	"time"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/runtime"
)

// newRuntime makes the execution's runtime with everything that does not
// depend on the job: the runtime itself and the guards every script gets
// (they read the job's limits when called, not when installed). The
// guards of the built-ins reachable from values come with the program's
// groups (lazy.go).
func (x *exec) newRuntime() {
	vm := goja.New()
	// eval and the Function constructors parse with these options.
	vm.SetParserOptions(parserOptions...)
	vm.SetMaxCallStackSize(x.e.maxStack)
	x.vm = vm
	// Sized for the stand-ins the Engine's runtimes made so far: a map
	// grown entry by entry rehashes several times over a few hundred.
	n := int(x.e.standIns.Load())
	x.wrappers, x.standIns = make(map[*goja.Object]*goja.Object, n), make(map[*goja.Object]*goja.Object, n)
	x.bound, x.proxies = map[*goja.Object]int{}, map[*goja.Object]int{}
	if fn, ok := vm.Get("Function").(*goja.Object); ok {
		if proto, ok := fn.Get("prototype").(*goja.Object); ok {
			x.hasInstance, _ = proto.GetSymbol(goja.SymHasInstance).(*goja.Object)
			if x.hasInstance != nil {
				x.rawHasInstance, _ = x.hasInstance.Export().(func(goja.FunctionCall) goja.Value)
			}
		}
	}
	if object, ok := vm.Get("Object").(*goja.Object); ok {
		x.rawOwnDescriptor = rawFunc(object.Get("getOwnPropertyDescriptor"))
		x.rawOwnSymbols = rawFunc(object.Get("getOwnPropertySymbols"))
		x.rawObjectKeys = rawFunc(object.Get("keys"))
		x.rawDefine = rawFunc(object.Get("defineProperty"))
	}
	if array, ok := vm.Get("Array").(*goja.Object); ok {
		if f, ok := array.Get("isArray").(*goja.Object); ok {
			x.isArray, _ = f.Export().(func(goja.FunctionCall) goja.Value)
		}
		// An intrinsic RangeError, for the guards' own errors: the one
		// the Array constructor throws for a negative length.
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
	x.guardFunction()
	x.guardRecursion()
	x.countValueBuiltins()
}

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
	if x.c.generators {
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
