package js

import (
	"errors"
	"strings"

	"github.com/dop251/goja"

	"github.com/ptcrun/ptc/internal/jsnest"
)

// Every way a script can make goja compile text at run time gets a check
// in front of it: eval, and the Function, GeneratorFunction and
// AsyncFunction constructors however they are reached (the globals, the
// constructor property of every function, Reflect.construct,
// subclasses). The check bounds the text's nesting (goja's parser and
// compiler recurse on it, and a stack overflow kills the process: text
// nested too deeply throws a catchable SyntaxError instead), and installs
// the guards the text needs (lazy.go) before it runs.
//
// eval stays a function of the same name and length, but a script's
// eval(…) is always an indirect eval: it runs in the global scope and does
// not see the calling function's variables (goja performs a direct eval
// only when the callee is its own intrinsic eval, which cannot be
// wrapped). The Function constructors keep their semantics: each argument
// is converted to a string once, in order, before the check.

// guardEval replaces the global eval.
func (x *exec) guardEval() {
	g := x.vm.GlobalObject()
	origEval, ok := g.Get("eval").(*goja.Object)
	if !ok {
		return
	}
	raw, ok := origEval.Export().(func(goja.FunctionCall) goja.Value)
	if !ok {
		return
	}
	eval := x.native("eval", 1, func(call goja.FunctionCall) goja.Value {
		if s, ok := call.Argument(0).(goja.String); ok {
			x.checkCompiled("eval", s.String())
		}
		return raw(call)
	})
	_ = g.DefineDataProperty("eval", eval, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// guardFunction replaces the Function constructor (the global and
// Function.prototype.constructor).
func (x *exec) guardFunction() {
	g := x.vm.GlobalObject()
	fn, ok := g.Get("Function").(*goja.Object)
	if !ok {
		return
	}
	wrapped := x.guardFunctionCtor(fn, "function")
	_ = g.DefineDataProperty("Function", wrapped, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if proto, ok := fn.Get("prototype").(*goja.Object); ok {
		_ = proto.DefineDataProperty("constructor", wrapped, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
}

// guardHiddenCtor replaces the constructor of proto, the prototype shared
// by generator functions or by async functions (their constructors are not
// globals), with its guarded proxy; kind is "function*" or "async
// function".
func (x *exec) guardHiddenCtor(proto *goja.Object, kind string) {
	if proto == nil {
		return
	}
	ctor, ok := proto.Get("constructor").(*goja.Object)
	if !ok || x.wrappers[ctor] != nil {
		return
	}
	_ = proto.DefineDataProperty("constructor", x.guardFunctionCtor(ctor, kind), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// guardAsyncFunction guards AsyncFunction, reached through the prototype
// of fn, an async function (guardBase makes one for it).
func (x *exec) guardAsyncFunction(fn goja.Value) {
	if obj, ok := fn.(*goja.Object); ok {
		x.guardHiddenCtor(obj.Prototype(), "async function")
	}
}

// guardGeneratorFunction guards GeneratorFunction. It runs only before
// code that creates generator functions: no generator function, no way to
// reach their constructor.
func (x *exec) guardGeneratorFunction() {
	if x.generatorsGuarded {
		return
	}
	x.generatorsGuarded = true
	x.install(groupBase)
	if g, err := x.vm.RunProgram(generatorProgram); err == nil {
		if obj, ok := g.(*goja.Object); ok {
			x.guardHiddenCtor(obj.Prototype(), "function*")
		}
	}
}

// generatorProgram evaluates to a generator function.
var generatorProgram = goja.MustCompile("generator.js", `(function* () {})`, true)

// guardFunctionCtor returns ctor behind a proxy that converts its
// arguments to strings, checks the source text goja will build from them
// (kind is "function", "function*" or "async function"), and calls or
// constructs ctor with the strings.
func (x *exec) guardFunctionCtor(ctor *goja.Object, kind string) *goja.Object {
	vm := x.vm
	convert := func(args []goja.Value) []goja.Value {
		strs := make([]goja.Value, len(args))
		parts := make([]string, len(args))
		for i, a := range args {
			s := a.ToString()
			strs[i], parts[i] = s, s.String()
		}
		var src strings.Builder
		src.WriteString("(" + kind + " anonymous(")
		if len(parts) > 1 {
			src.WriteString(strings.Join(parts[:len(parts)-1], ","))
		}
		src.WriteString("\n) ")
		left := src.Len()
		src.WriteString("{\n")
		if len(parts) > 0 {
			src.WriteString(parts[len(parts)-1])
		}
		src.WriteString("\n})")
		x.checkCompiled(kind, src.String())
		x.checkFunctionShape(kind, src.String(), left)
		return strs
	}
	construct, _ := goja.AssertConstructor(ctor)
	if kind == "function" && x.rawSyntaxError == nil {
		// An intrinsic SyntaxError, for the guards' own errors.
		x.rawSyntaxError = func() goja.Value {
			_, err := construct(nil, vm.ToValue("("))
			var ex *goja.Exception
			if errors.As(err, &ex) {
				return ex.Value()
			}
			return nil
		}
	}
	return x.fnProxy(ctor, &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, _ goja.Value, args []goja.Value) goja.Value {
			v, err := construct(nil, convert(args)...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
		Construct: func(_ *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			if newTarget == nil || x.isWrapperOf(newTarget, ctor) {
				newTarget = ctor
			}
			v, err := construct(newTarget, convert(args)...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
	})
}

// isWrapperOf reports whether obj is the proxy standing for orig.
func (x *exec) isWrapperOf(obj, orig *goja.Object) bool { return x.wrappers[obj] == orig }

// checkFunctionShape throws a SyntaxError if src, the text a Function
// constructor of kind builds from its arguments, parses into something
// else than the one function whose body opens at byte offset left (a body
// "}); sideEffect(); (function () {" would run code as the function is
// made). Text that does not parse is left for the constructor to reject.
func (x *exec) checkFunctionShape(kind, src string, left int) {
	prg, err := parse("", src)
	if errors.Is(err, jsnest.ErrParserFailed) {
		x.throwSyntax(kind + ": " + err.Error())
	}
	if err != nil {
		return
	}
	if ok, _ := wrapperIntact(prg, left, len(src)-2); !ok {
		x.throwSyntax(kind + ": the parameters or the body close the function they define; pass a parameter list and a body that each stand on their own")
	}
}

// checkCompiled throws a SyntaxError if src, about to be compiled by what
// (eval or a Function constructor), nests too deeply.
func (x *exec) checkCompiled(what, src string) {
	groups, info, ne := scan(src)
	if ne != nil {
		x.throwSyntax(what + ": " + ne.Error())
	}
	x.install(groups)
	if info.Generators {
		x.guardGeneratorFunction()
	}
	if what == "eval" {
		// goja parses eval's text itself, where a panic of its parser
		// would end the execution as an internal error: parsed here
		// first, such text throws a SyntaxError (the Function
		// constructors' text is parsed by checkFunctionShape).
		if _, err := parse("", src); errors.Is(err, jsnest.ErrParserFailed) {
			x.throwSyntax(what + ": " + err.Error())
		}
	}
}
