package js_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/internal/runtime/js"
)

// scanBombs are built-in calls that would walk billions of indices (or
// build a huge BigInt) in one native step that no limit could interrupt.
var scanBombs = []struct{ name, expr string }{
	{"indexOf", `new Array(2 ** 32 - 1).indexOf(1)`},
	{"lastIndexOf", `new Array(2 ** 32 - 1).lastIndexOf(1)`},
	{"includes", `new Array(2 ** 32 - 1).includes(1)`},
	{"reverse", `new Array(2 ** 32 - 1).reverse()`},
	{"sort", `new Array(2 ** 32 - 1).sort()`},
	{"sort with one element", `const a = []; a.length = 2 ** 32 - 1; a[5] = 1; a.sort()`},
	{"copyWithin", `new Array(2 ** 32 - 1).copyWithin(0, 1)`},
	{"splice", `new Array(2 ** 32 - 1).splice(0, 1)`},
	{"slice", `new Array(2 ** 32 - 1).slice()`},
	{"shift", `new Array(2 ** 32 - 1).shift()`},
	{"unshift", `new Array(2 ** 32 - 2).unshift(1)`},
	{"forEach", `new Array(2 ** 32 - 1).forEach(x => x)`},
	{"every", `new Array(2 ** 32 - 1).every(x => false)`},
	{"some", `new Array(2 ** 32 - 1).some(x => true)`},
	{"map", `new Array(2 ** 32 - 1).map(x => x)`},
	{"filter", `new Array(2 ** 32 - 1).filter(x => x)`},
	{"reduce", `new Array(2 ** 32 - 1).reduce((a, b) => a, 0)`},
	{"reduceRight", `new Array(2 ** 32 - 1).reduceRight((a, b) => a, 0)`},
	{"find with a native callback", `new Array(2 ** 32 - 1).find(Array.isArray)`},
	{"findLastIndex with a native callback", `new Array(2 ** 32 - 1).findLastIndex(Array.isArray)`},
	{"concat of a sparse argument", `[].concat(new Array(2 ** 32 - 1))`},
	{"concat of a spreadable array-like", `Array.prototype.concat.call({length: 2 ** 53 - 1, [Symbol.isConcatSpreadable]: true})`},
	{"flat", `new Array(2 ** 32 - 1).flat()`},
	{"flat of a nested sparse array", `[new Array(2 ** 32 - 1)].flat()`},
	{"flat of a deeply nested sparse array", `[[[new Array(2 ** 32 - 1)]]].flat(Infinity)`},
	{"flatMap", `new Array(2 ** 32 - 1).flatMap(x => x)`},
	{"flatMap returning a sparse array", `[1].flatMap(() => new Array(2 ** 32 - 1))`},
	{"join", `new Array(2 ** 32 - 1).join()`},
	{"join whose separator grows the array", `const a = [1, 2]; a.join({toString() { a.length = 2 ** 32 - 1; return "," }})`},
	{"toString", `String(new Array(2 ** 32 - 1))`},
	{"indexOf of an array-like", `Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`},
	{"includes of a proxy", `Array.prototype.includes.call(new Proxy(new Array(2 ** 32 - 1), {}), 1)`},
	{"fill of a sparse span", `new Array(2 ** 32 - 1).fill(1, 2 ** 32 - 2 ** 26)`},
	{"JSON.stringify", `JSON.stringify(new Array(2 ** 32 - 1))`},
	{"JSON.stringify property list", `JSON.stringify({}, new Array(2 ** 32 - 1))`},
	{"Reflect.apply of a method", `Reflect.apply(Array.prototype.lastIndexOf, new Array(2 ** 32 - 1), [1])`},
	{"BigInt.asUintN", `BigInt.asUintN(2 ** 40, -1n)`},
	{"BigInt.asUintN of all bits", `BigInt.asUintN(2 ** 53 - 1, -1n)`},
	{"BigInt.asIntN of an object", `BigInt.asIntN(2 ** 53 - 1, {valueOf() { return 1n }})`},
	{"BigInt.asUintN of an object", `BigInt.asUintN(2 ** 40, {valueOf() { return -1n }})`},
	{"BigInt of many decimal digits", `BigInt("9".repeat(1e6))`},
	{"BigInt of many hex digits", `BigInt("0x" + "f".repeat(2 ** 27))`},
	{"BigInt through its prototype", `(0n).constructor("9".repeat(1e6))`},
}

// TestScanGuards: built-ins that would walk more indices than the memory
// limit allows an array to have, or build a BigInt bigger than it, throw
// a catchable RangeError at once — under a 2 s timeout they could not
// have ended within, whatever the receiver (sparse array, array-like,
// proxy) or the arguments do.
func TestScanGuards(t *testing.T) {
	e := js.New()
	lim := limits.Limits{MemoryBytes: 64 << 20, Timeout: 2 * time.Second, CPUTime: time.Minute}
	for _, c := range scanBombs {
		t.Run(c.name, func(t *testing.T) {
			src := `try { ` + c.expr + `; return "done" } catch (e) { return [e.name, e instanceof RangeError, /limit|parse/.test(e.message)] }`
			out, _, _ := run(t, e, src, runOpts{limits: lim})
			if out.Err != nil || string(out.Result) != `["RangeError",true,true]` {
				t.Fatalf("result %s, error %v", out.Result, out.Err)
			}
		})
	}
}

// TestScanGuardsUncaught: left uncaught, the guard's RangeError is a
// SCRIPT_ERROR that names the built-in and says what to do.
func TestScanGuardsUncaught(t *testing.T) {
	e := js.New()
	lim := limits.Limits{MemoryBytes: 64 << 20, Timeout: 2 * time.Second, CPUTime: time.Minute}
	out, _, _ := run(t, e, `return new Array(2 ** 32 - 1).indexOf(1)`, runOpts{limits: lim})
	if out.Err == nil || out.Err.Kind != fault.KindScript ||
		!strings.Contains(out.Err.Message, "RangeError: Array.prototype.indexOf would visit 4294967295 indices") ||
		!strings.Contains(out.Err.Message, "work on smaller pieces") {
		t.Fatalf("error %v", out.Err)
	}
}

// TestScanGuardsKeepResults: within the bound the guarded built-ins give
// what they always gave, on arrays, holes, array-likes, proxies, strings
// and BigInts.
func TestScanGuardsKeepResults(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"indexOf", `return [[1, 2, 3].indexOf(2), [1, , 3].indexOf(undefined), [1, 2, 1].lastIndexOf(1, -2), [NaN].includes(NaN)]`, `[1,-1,0,true]`},
		{"sparse within the bound", `const a = []; a[1e5] = 7; return [a.indexOf(7), a.lastIndexOf(7), a.includes(7), a.filter(x => x).length]`, `[100000,100000,true,1]`},
		{"array-like", `const o = {length: 3, 0: "a", 1: "b", 2: "c"}; return [Array.prototype.indexOf.call(o, "c"), Array.prototype.map.call(o, s => s + s), Array.prototype.reverse.call(o) === o, o[0]]`, `[2,["aa","bb","cc"],true,"c"]`},
		{"array-like length read once", `let n = 0; const o = {get length() { n++; return 2 }, 0: 1, 1: 2}; Array.prototype.forEach.call(o, () => {}); return n`, `1`},
		{"callback sees the array", `const a = [1, 2]; return a.map((x, i, arr) => arr === a)`, `[true,true]`},
		{"string receiver", `return Array.prototype.map.call("ab", c => c + c)`, `["aa","bb"]`},
		{"proxy receiver", `const p = new Proxy([3, 4], {}); return [Array.prototype.indexOf.call(p, 4), p.slice(1)]`, `[1,[4]]`},
		{"sort and reverse in place", `const a = [3, 1, 2]; return [a.sort() === a, a.reverse() === a, a]`, `[true,true,[3,2,1]]`},
		{"splice shift unshift", `const a = [1, 2, 3]; a.splice(1, 1); a.shift(); a.unshift(0); return a`, `[0,3]`},
		{"concat", `return [[1].concat([2, [3]], 4), Array.prototype.concat.call({a: 1}, [2]).length, [].concat({length: 2, 0: "x", 1: "y", [Symbol.isConcatSpreadable]: true})]`, `[[1,2,[3],4],2,["x","y"]]`},
		{"concat keeps an object it does not spread", `const o = {}; return [].concat(o)[0] === o`, `true`},
		{"flat", `return [[1, [2, [3, [4]]]], [5]].flat(2)`, `[1,2,[3,[4]],5]`},
		{"flat of depth Infinity and holes", `return [1, , [2, , [3]]].flat(Infinity)`, `[1,2,3]`},
		{"flat of a fractional depth", `return [[1, [2]]].flat(1.5)`, `[1,[2]]`},
		{"flat of an array-like", `return Array.prototype.flat.call({length: 2, 0: [1], 1: 2})`, `[1,2]`},
		{"flatMap", `return [1, 2].flatMap(x => [x, [x * 2]])`, `[1,[2],2,[4]]`},
		{"flatMap this", `return [1].flatMap(function () { return this.v }, {v: [9]})`, `[9]`},
		{"join with a separator", `return [1, 2, 3].join("-")`, `"1-2-3"`},
		{"JSON.stringify", `return JSON.stringify([1, , {a: [2]}], ["a"])`, `"[1,null,{\"a\":[2]}]"`},
		{"BigInt", `return [String(BigInt("123456789012345678901234567890")), String(BigInt(" 0x1f ")), String(BigInt(true))]`, `["123456789012345678901234567890","31","1"]`},
		{"asUintN and asIntN", `return [BigInt.asUintN(64, -1n), BigInt.asIntN(8, 255n), BigInt.asUintN(2 ** 40, 5n), BigInt.asIntN(2 ** 40, -5n), BigInt.asUintN(2 ** 40, "12"), BigInt.asIntN(2 ** 50, true)].map(String)`, `["18446744073709551615","-1","5","-5","12","1"]`},
		{"asUintN of a number", `try { BigInt.asUintN(2 ** 40, 1) } catch (e) { return e.name }`, `"TypeError"`},
		{"BigInt looks the same", `return [typeof BigInt, BigInt.name, BigInt.length, (1n).constructor === BigInt, Object(1n) instanceof BigInt, String(BigInt), Object.getOwnPropertyNames(BigInt).sort()]`, `["function","BigInt",1,true,true,"function BigInt() { [native code] }",["asIntN","asUintN","length","name","prototype"]]`},
		{"BigInt is not a constructor", `try { new BigInt(1) } catch (e) { return e.name }`, `"TypeError"`},
	}
	e := js.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, _ := run(t, e, c.src, runOpts{limits: limits.Limits{Timeout: time.Minute, CPUTime: time.Minute}})
			if out.Err != nil || string(out.Result) != c.want {
				t.Fatalf("result %s, error %v; want %s", out.Result, out.Err, c.want)
			}
		})
	}
}

// TestBuiltinFailureHidesGoErrors: a built-in that fails in Go on what the
// script did throws a TypeError without the Go runtime's text.
func TestBuiltinFailureHidesGoErrors(t *testing.T) {
	out, _, _ := run(t, js.New(), `const a = Array.from({length: 100}, (_, i) => i);
try { a.sort((x, y) => { a.length = 0; return x - y }); return "sorted" } catch (e) { return [e.name, e.message] }`, runOpts{})
	if out.Err != nil || !strings.HasPrefix(string(out.Result), `["TypeError",`) || strings.Contains(string(out.Result), "runtime error") {
		t.Fatalf("result %s, error %v", out.Result, out.Err)
	}
}

// TestIteratorDrainsEndAtTheLimits: a spread, Array.from, new Set or
// Promise.all drains an array or string iterator in one native loop; over
// a sparse array of length 2**32-1 it would run for hours. The iterators
// check the limits as they go: the drain ends with the limit it ran out
// of, caught or not.
func TestIteratorDrainsEndAtTheLimits(t *testing.T) {
	drains := []struct{ name, src string }{
		{"spread", `return [...new Array(2 ** 32 - 1).keys()].length`},
		{"Array.from", `return Array.from(new Array(2 ** 32 - 1).values()).length`},
		{"new Set", `return new Set(new Array(2 ** 32 - 1).entries()).size`},
		{"Promise.all", `return (await Promise.all(new Array(2 ** 32 - 1).keys())).length`},
		{"array-like values", `return [...Array.prototype.values.call({length: 2 ** 53 - 1})].length`},
		{"caught", `try { [...new Array(2 ** 32 - 1).keys()] } catch (e) { return e.name }`},
		{"Set without a property read", `const s = new Set(new Array(2 ** 32 - 1)); return 1`},
		{"typed array without a property read", `const t = new Uint8Array(new Array(2 ** 25)); return 1`},
	}
	e := js.New()
	for _, limit := range []struct {
		kind fault.Kind
		lim  limits.Limits
	}{
		{fault.KindTimeout, limits.Limits{Timeout: time.Second, CPUTime: time.Minute}},
		{fault.KindCPULimit, limits.Limits{Timeout: time.Minute, CPUTime: time.Second}},
	} {
		for _, d := range drains {
			t.Run(limit.kind.String()+"/"+d.name, func(t *testing.T) {
				out, _, _ := run(t, e, d.src, runOpts{limits: limit.lim})
				if out.Err == nil || out.Err.Kind != limit.kind {
					t.Fatalf("result %s, error %v; want %v", out.Result, out.Err, limit.kind)
				}
			})
		}
	}
}

// TestIteratorsKeepWorking: the guarded iterators give what they gave.
func TestIteratorsKeepWorking(t *testing.T) {
	out, _, _ := run(t, js.New(), `const a = []; a[3] = "d";
const s = new Set("abca"); const r = [];
for (const [i, v] of ["x", "y"].entries()) r.push(i + v);
return [[...a.keys()], [..."héllo"].length, [...s].join(""), r, Array.from({length: 2, 0: 1}.constructor === Object ? Array.prototype.values.call({length: 2, 0: 1}) : []), [...new Array(3000).keys()].length]`, runOpts{})
	if out.Err != nil || string(out.Result) != `[[0,1,2,3],5,"abc",["0x","1y"],[1,null],3000]` {
		t.Fatalf("result %s, error %v", out.Result, out.Err)
	}
}
