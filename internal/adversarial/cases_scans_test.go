package adversarial

import (
	"fmt"
	"strings"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// scanCases: built-ins that would walk billions of indices of a sparse
// array or an array-like, or build a huge BigInt, in one native step no
// limit can interrupt. Under a 2 s timeout, in both modes, each is the
// guards' catchable RangeError, at once: never a hang, never Go's text.
func scanCases() []tcase {
	exprs := []struct {
		name, expr string
		fast       bool
	}{
		{"sparse-indexof", `new Array(2 ** 32 - 1).indexOf(1)`, true},
		{"sparse-lastindexof", `new Array(2 ** 32 - 1).lastIndexOf(1)`, false},
		{"sparse-includes", `new Array(2 ** 32 - 1).includes(1)`, false},
		{"sparse-reverse", `new Array(2 ** 32 - 1).reverse()`, false},
		{"sparse-sort", `new Array(2 ** 32 - 1).sort()`, false},
		{"sparse-foreach", `new Array(2 ** 32 - 1).forEach(x => x)`, false},
		{"sparse-find-native-callback", `new Array(2 ** 32 - 1).find(Array.isArray)`, false},
		{"sparse-unshift", `new Array(2 ** 32 - 2).unshift(1)`, false},
		{"sparse-concat", `[].concat(new Array(2 ** 32 - 1))`, false},
		{"sparse-nested-flat", `[[new Array(2 ** 32 - 1)]].flat(Infinity)`, false},
		{"sparse-flatmap-result", `[1].flatMap(() => new Array(2 ** 32 - 1))`, false},
		{"sparse-json-stringify", `JSON.stringify(new Array(2 ** 32 - 1))`, false},
		{"array-like-indexof", `Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)`, true},
		{"proxy-includes", `Array.prototype.includes.call(new Proxy(new Array(2 ** 32 - 1), {}), 1)`, false},
		{"join-separator-grows-array", `const a = [1, 2]; a.join({toString() { a.length = 2 ** 32 - 1; return "," }})`, false},
		{"bigint-asuintn-huge", `BigInt.asUintN(2 ** 40, -1n)`, true},
		{"bigint-asuintn-max", `BigInt.asUintN(2 ** 53 - 1, -1n)`, false},
		{"bigint-parse-digits", `BigInt("9".repeat(1e6))`, false},
	}
	var cs []tcase
	for _, e := range exprs {
		cs = append(cs, tcase{name: "scan-" + e.name, family: famBomb, fast: e.fast, bound: bombBound,
			req:  jsReq(caught(e.expr), timeout(2*time.Second), cpu(time.Minute), memory(64*MiB)),
			want: neverAllocated})
	}
	// A length that grows once the guard has read it: the built-in sees
	// the length the guard checked.
	cs = append(cs, tcase{name: "scan-array-like-length-grows", family: famBomb, bound: bombBound,
		req:  jsReq(`let n = 0; return Array.prototype.includes.call({get length() { return n++ ? 2 ** 53 - 1 : 1 }}, 1)`, timeout(2*time.Second), cpu(time.Minute), memory(64*MiB)),
		want: succeeds("false")})
	// The BigInt operators are instructions of goja's VM that run in
	// math/big without a guard (docs/security.md).
	cs = append(cs, residual(tcase{name: "bigint-huge-shift", family: famBomb, bound: bombBound,
		req: jsReq(`return String(1n << 10000000000n).length`, tight), want: memoryBomb.or(CPULimit, Timeout)},
		"1n << 10000000000n shifts inside math/big, which cannot be interrupted: in-process it runs past its timeout allocating until ptcd itself runs out of memory; worker mode kills it at the deadline", inprocess))
	// Iterator drains: native loops that call next; each ends at the
	// limit it runs out of first: its deadline on a slow machine, its
	// memory on a fast one, never a hang or a catchable error.
	for _, d := range []struct{ name, src string }{
		{"spread", `return [...new Array(2 ** 32 - 1).keys()].length`},
		{"set", `return new Set(new Array(2 ** 32 - 1).values()).size`},
		{"caught", `try { return Array.from(new Array(2 ** 32 - 1).entries()).length } catch (e) { return e.name }`},
	} {
		cs = append(cs, tcase{name: "drain-" + d.name, family: famBomb, fast: d.name == "spread", bound: bombBound,
			req: jsReq(d.src, timeout(2*time.Second), cpu(time.Minute), memory(256*MiB)), want: fails(Timeout, MemoryLimit)})
	}
	// Uncaught, the RangeError is a SCRIPT_ERROR that names the built-in.
	cs = append(cs, tcase{name: "scan-sparse-indexof-uncaught", family: famBomb, bound: bombBound,
		req:  jsReq(`return new Array(2 ** 32 - 1).indexOf(1)`, timeout(2*time.Second), cpu(time.Minute), memory(64*MiB)),
		want: fails(ScriptError).and(namesBuiltin("RangeError: Array.prototype.indexOf would visit"))})
	cs = append(cs, tcase{name: "scan-bigint-asuintn-uncaught", family: famBomb, bound: bombBound,
		req:  jsReq(`return String(BigInt.asUintN(2 ** 53 - 1, -1n))`, timeout(2*time.Second), cpu(time.Minute), memory(64*MiB)),
		want: fails(ScriptError).and(namesBuiltin("RangeError: BigInt.asUintN would make a BigInt"))})
	return cs
}

// namesBuiltin checks that the error message says prefix and carries no
// Go runtime text.
func namesBuiltin(prefix string) func(*ptcv1.ExecuteResponse) error {
	return func(r *ptcv1.ExecuteResponse) error {
		m := r.GetError().GetMessage()
		if !strings.Contains(m, prefix) || strings.Contains(m, "runtime error") {
			return fmt.Errorf("message %q, want one with %q and no Go runtime text", m, prefix)
		}
		return nil
	}
}
