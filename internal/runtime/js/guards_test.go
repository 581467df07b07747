package js_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// TestSizeGuards: built-ins that allocate in one native step throw a
// catchable RangeError when the allocation is more than the memory limit
// allows, however they are reached — the checked size cannot be changed
// between the check and the allocation.
func TestSizeGuards(t *testing.T) {
	cases := []struct{ name, expr string }{
		{"ArrayBuffer", `new ArrayBuffer(2 ** 31)`},
		{"Uint8Array", `new Uint8Array(2 ** 31)`},
		{"Float64Array", `new Float64Array(2 ** 26)`},
		{"BigInt64Array", `new BigInt64Array(2 ** 26)`},
		{"typed array from a typed array", `new Float64Array(new Uint8Array(2 ** 25))`},
		{"typed array from an array-like", `new Int32Array({length: 2 ** 30})`},
		{"typed array from a sparse array", `new Int32Array(new Array(2 ** 30))`},
		{"TypedArray.from", `Uint8Array.from({length: 2 ** 31})`},
		{"typed array subclass", `class X extends Uint8Array {}; new X(2 ** 31)`},
		{"typed array through its prototype", `new (Object.getPrototypeOf(new Uint8Array(1)).constructor)(2 ** 31)`},
		{"ArrayBuffer through a buffer", `new (new Uint8Array(1).buffer.constructor)(2 ** 31)`},
		{"Reflect.construct typed array", `Reflect.construct(Uint8Array, [2 ** 31])`},
		{"repeat", `"x".repeat(2 ** 30)`},
		{"repeat of an object's string", `String.prototype.repeat.call({toString: () => "x".repeat(1000)}, 2 ** 20)`},
		{"padStart", `"x".padStart(2 ** 30)`},
		{"padEnd", `"x".padEnd(2 ** 30, "ab")`},
		{"concat", `(() => { const s = "x".repeat(2 ** 24); return s.concat(s, s, s, s, s, s, s, s) })()`},
		{"join", `new Array(2 ** 32 - 1).join()`},
		{"join with a separator", `new Array(2 ** 28).join("abc")`},
		{"join of an array-like", `Array.prototype.join.call({length: 2 ** 32 - 1})`},
		{"toString", `String(new Array(2 ** 32 - 1))`},
		{"toLocaleString", `new Array(2 ** 32 - 1).toLocaleString()`},
		{"fill", `new Array(3e8).fill(1)`},
		{"fill with a range", `new Array(3e8).fill(1, 10)`},
		{"fill of an array-like", `Array.prototype.fill.call({length: 2 ** 40}, 1)`},
		{"Array.from of an array-like", `Array.from({length: 2 ** 32 - 1})`},
		{"Array.from of a sparse array", `Array.from(new Array(2 ** 32 - 1))`},
		{"toReversed", `new Array(2 ** 32 - 1).toReversed()`},
		{"toSorted", `new Array(2 ** 32 - 1).toSorted()`},
		{"with", `new Array(2 ** 32 - 1).with(0, 1)`},
		{"toSpliced", `new Array(2 ** 32 - 1).toSpliced(0, 0, 1)`},
		{"toReversed of an array-like", `Array.prototype.toReversed.call({length: 2 ** 32 - 1})`},
		{"apply", `Math.max.apply(null, new Array(2 ** 30))`},
		{"apply of an array-like", `Math.max.apply(null, {length: 2 ** 30})`},
		{"Reflect.apply", `Reflect.apply(Math.max, null, {length: 2 ** 30})`},
		{"JSON.stringify output", `JSON.stringify(new Array(2 ** 20).fill("x".repeat(1000)))`},
	}
	e := js.New()
	// Time is not what this test checks: the slowest case
	// (JSON.stringify of a million 1,000-character strings, until the
	// output guard stops it) needs 18 s of CPU under the race detector.
	lim := limits.Limits{MemoryBytes: 64 << 20, Timeout: 2 * time.Minute, CPUTime: 2 * time.Minute}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `try { ` + c.expr + `; return "allocated" } catch (e) { return [e.name, e instanceof RangeError, /memory limit/.test(e.message)] }`
			out, _, _ := run(t, e, src, runOpts{limits: lim})
			if out.Err != nil || string(out.Result) != `["RangeError",true,true]` {
				t.Fatalf("result %s, error %v", out.Result, out.Err)
			}
		})
	}
}

// TestSizeGuardsWithoutAccess: code that reads no property still meets
// the size guards where it can reach a guarded built-in implicitly (an
// array converted to a string calls its join): naming Array installs them
// (lazy.go, groupSizes).
func TestSizeGuardsWithoutAccess(t *testing.T) {
	cases := []struct{ name, expr string }{
		{"concatenation", `'' + Array(2 ** 32 - 1)`},
		{"template literal", "`${Array(2 ** 28)}`"},
		{"String", `String(Array(2 ** 32 - 1))`},
	}
	e := js.New()
	lim := limits.Limits{MemoryBytes: 64 << 20, Timeout: time.Minute, CPUTime: time.Minute}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `try { return ` + c.expr + ` } catch (e) { return '' + e }`
			out, _, _ := run(t, e, src, runOpts{limits: lim})
			if out.Err != nil || !strings.HasPrefix(string(out.Result), `"RangeError: `) || !strings.Contains(string(out.Result), "memory limit") {
				t.Fatalf("result %s, error %v", out.Result, out.Err)
			}
		})
	}
}

// TestSizeGuardsConvertOnce: a value that changes between readings
// (valueOf, a length getter) is read once, so what the guard checks is
// what the built-in gets.
func TestSizeGuardsConvertOnce(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"repeat count", `let n = 0; const s = "x".repeat({valueOf() { return n++ ? 2 ** 30 : 2 }}); return [s.length, n]`, `[2,1]`},
		{"padEnd length", `let n = 0; return ["x".padEnd({valueOf() { return n++ ? 2 ** 30 : 3 }}).length, n]`, `[3,1]`},
		{"join of a growing array-like", `let n = 0; const o = {get length() { return n++ ? 2 ** 32 - 1 : 2 }, 0: "a", 1: "b"}; return [Array.prototype.join.call(o, "-"), n]`, `["a-b",1]`},
		{"Array.from of a growing array-like", `let n = 0; const o = {get length() { return n++ ? 2 ** 32 - 1 : 2 }}; return [Array.from(o).length, n]`, `[2,1]`},
		{"fill of a growing array-like", `let n = 0; const o = {get length() { return n++ ? 2 ** 40 : 2 }}; Array.prototype.fill.call(o, 7); return [o[0], o[1], o[2], n]`, `[7,7,null,1]`},
		{"typed array of a growing array-like", `let n = 0; const o = {get length() { return n++ ? 2 ** 31 : 2 }}; return [new Uint8Array(o).length, n]`, `[2,1]`},
		{"apply of a growing array-like", `let n = 0; const o = {get length() { return n++ ? 2 ** 30 : 2 }, 0: 1, 1: 5}; return [Math.max.apply(null, o), n]`, `[5,1]`},
	}
	e := js.New()
	lim := limits.Limits{MemoryBytes: 64 << 20}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, _ := run(t, e, c.src, runOpts{limits: lim})
			if out.Err != nil || string(out.Result) != c.want {
				t.Fatalf("result %s, error %v; want %s", out.Result, out.Err, c.want)
			}
		})
	}
}

// TestGuardedBuiltinsBehave: the guarded built-ins keep their ordinary
// results, names, lengths and string forms.
func TestGuardedBuiltinsBehave(t *testing.T) {
	src := `const b = new Uint8Array([1, 2, 3]);
return [
  "ab".repeat(2), "5".padStart(3, "0"), "a".concat(1, [2]), [1, [2, [3]]].join(), String([1, [2]]), [1.5].toLocaleString(),
  new Array(3).fill(0), Array.from("abc"), Array.from({length: 2}, (_, i) => i * 2), Array.from(new Set([1, 2])),
  [3, 1, 2].toSorted(), [1, 2].toReversed(), [1, 2].with(0, 9), [1, 2, 3].toSpliced(1, 1), Math.max.apply(null, [1, 3, 2]),
  Array.from(b.map((x) => x * 2)), b instanceof Uint8Array, Object.getPrototypeOf(b).constructor === Uint8Array,
  new ArrayBuffer(8).byteLength, Uint8Array.from([1, 2]).length, new Float64Array(new Uint8Array([4])).length, Uint8Array.BYTES_PER_ELEMENT,
  String(Uint8Array), Uint8Array.name, ArrayBuffer.length, String([].join), [].join.name, [].join.length, String.prototype.repeat.length,
  Array.prototype.flat.name, typeof Proxy, String(JSON.stringify), Reflect.apply.name, [[1, [2, [3, [4]]]]].flat(Infinity),
]`
	out, _, _ := run(t, js.New(), src, runOpts{})
	const want = `["abab","005","a12","1,2,3","1,2","1.5",[0,0,0],["a","b","c"],[0,2],[1,2],[1,2,3],[2,1],[9,2],[1,3],3,[2,4,6],true,true,8,2,1,1,` +
		`"function Uint8Array() { [native code] }","Uint8Array",1,"function join() { [native code] }","join",1,1,"flat","function",` +
		`"function stringify() { [native code] }","apply",[1,2,3,4]]`
	if out.Err != nil || string(out.Result) != want {
		t.Fatalf("result %s, error %v\nwant   %s", out.Result, out.Err, want)
	}
}
