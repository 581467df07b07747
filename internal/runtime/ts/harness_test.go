package ts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// runResult is what a script did when run by runProgram.
type runResult struct {
	// JSON is JSON.stringify of the resolved value.
	JSON string
	// Rejected is the rejection value when the promise rejected.
	Rejected goja.Value
	// Logs holds console.log lines.
	Logs []string
}

// runProgram runs p the way the JS engine does, in a fresh goja runtime:
// define input, tools and console, run the program, call the async
// function, and read the settled promise. Tools are stubs that return
// resolved promises: tools.echo(args) gives args back,
// tools.github.search(args) too, and the functions in extra are added.
// useJS runs p.JS as text instead of p.Compiled.
func runProgram(t testing.TB, p *program, input string, useJS bool, extra map[string]func(args any) any) runResult {
	t.Helper()
	vm := goja.New()
	var res runResult
	parse := func(text string) goja.Value {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("bad JSON %q: %v", text, err)
		}
		return vm.ToValue(v)
	}
	resolved := func(v any) goja.Value {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("marshal tool result: %v", err)
		}
		promise, resolve, _ := vm.NewPromise()
		if err := resolve(parse(string(b))); err != nil {
			t.Fatalf("resolve: %v", err)
		}
		return vm.ToValue(promise)
	}
	tool := func(f func(args any) any) func(goja.FunctionCall) goja.Value {
		return func(call goja.FunctionCall) goja.Value {
			return resolved(f(call.Argument(0).Export()))
		}
	}
	echo := func(args any) any { return args }
	tools := vm.NewObject()
	must(t, tools.Set("echo", tool(echo)))
	github := vm.NewObject()
	must(t, github.Set("search", tool(echo)))
	must(t, tools.Set("github", github))
	for name, f := range extra {
		must(t, tools.Set(name, tool(f)))
	}
	console := vm.NewObject()
	must(t, console.Set("log", func(call goja.FunctionCall) goja.Value {
		parts := make([]string, len(call.Arguments))
		for i, a := range call.Arguments {
			parts[i] = a.String()
		}
		res.Logs = append(res.Logs, strings.Join(parts, " "))
		return goja.Undefined()
	}))
	must(t, vm.Set("tools", tools))
	must(t, vm.Set("console", console))
	if input == "" {
		input = "null"
	}
	must(t, vm.Set("input", parse(input)))
	// goja has no Symbol.dispose; the engine defines it as the symbol that
	// esbuild's lowered "using" falls back to.
	if _, err := vm.RunString(`Symbol.dispose = Symbol.for("Symbol.dispose"); Symbol.asyncDispose = Symbol.for("Symbol.asyncDispose");`); err != nil {
		t.Fatalf("define Symbol.dispose: %v", err)
	}

	var (
		v   goja.Value
		err error
	)
	if useJS {
		v, err = vm.RunScript(compiledName, p.JS)
	} else {
		v, err = vm.RunProgram(p.Compiled)
	}
	if err != nil {
		t.Fatalf("run program: %v", err)
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		t.Fatalf("program completion value is %v, want a function", v)
	}
	ret, err := fn(goja.Undefined())
	if err != nil {
		t.Fatalf("call script function: %v", err)
	}
	promise, ok := ret.Export().(*goja.Promise)
	if !ok {
		t.Fatalf("script function returned %v, want a promise", ret)
	}
	switch promise.State() {
	case goja.PromiseStateFulfilled:
		stringify, _ := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("stringify"))
		s, err := stringify(goja.Undefined(), promise.Result())
		if err != nil {
			t.Fatalf("stringify result: %v", err)
		}
		res.JSON = s.String()
	case goja.PromiseStateRejected:
		res.Rejected = promise.Result()
	default:
		t.Fatalf("script promise still pending after the job queue drained")
	}
	return res
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rejectionStack returns the stack property of a rejection value.
func rejectionStack(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if s := o.Get("stack"); s != nil {
			return s.String()
		}
	}
	return fmt.Sprint(v)
}
