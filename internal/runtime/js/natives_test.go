package js_test

import (
	"testing"

	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestFunctionsLookNative: every function ptc gives a script reads like a
// built-in: "function name() { [native code] }", a sensible name and
// length — never a Go symbol.
func TestFunctionsLookNative(t *testing.T) {
	out, _, _ := run(t, js.New(), `const f = (fn) => [String(fn), fn.name, fn.length];
const getter = Object.getOwnPropertyDescriptor(globalThis, "console").get;
return [
  f(tools.add), f(tools.ns.inner.deep), f(tools.not_a_tool), f(tools.$search), f(tools.$describe),
  f(console.log), f(console.error), f(getter),
  f(eval), f(Function), f(JSON.parse), f(Array.prototype.join), f("".repeat), f(Uint8Array), f(RegExp), f(Proxy),
  f(Object.getPrototypeOf(async function () {}).constructor),
]`, runOpts{})
	const want = `[["function add() { [native code] }","add",1],["function deep() { [native code] }","deep",1],` +
		`["function not_a_tool() { [native code] }","not_a_tool",1],["function $search() { [native code] }","$search",2],` +
		`["function $describe() { [native code] }","$describe",1],["function log() { [native code] }","log",0],` +
		`["function error() { [native code] }","error",0],["function get console() { [native code] }","get console",0],` +
		`["function eval() { [native code] }","eval",1],["function Function() { [native code] }","Function",1],` +
		`["function parse() { [native code] }","parse",2],["function join() { [native code] }","join",1],` +
		`["function repeat() { [native code] }","repeat",1],["function Uint8Array() { [native code] }","Uint8Array",3],` +
		`["function RegExp() { [native code] }","RegExp",2],["function Proxy() { [native code] }","Proxy",2],` +
		`["function AsyncFunction() { [native code] }","AsyncFunction",1]]`
	if out.Err != nil || string(out.Result) != want {
		t.Fatalf("result %s, error %v\nwant   %s", out.Result, out.Err, want)
	}
}
