package js

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dop251/goja"
)

// BigInt guards. goja computes BigInts with math/big in one native step:
// BigInt.asUintN(2**40, -1n) allocates 2**40 bits before returning (an
// out-of-memory that takes the whole process down in-process), and
// BigInt("9".repeat(1e6)) parses in time quadratic in the digits (seconds
// per call, minutes for ten times more). The guards bound what the
// built-ins that build BigInts may build: a result over maxBigIntBits, or
// a decimal string over maxBigIntDigits, is a catchable RangeError.
//
// The BigInt operators (*, **, <<) are instructions of goja's VM, not
// built-ins, and cannot be guarded here: see docs/security.md.

const (
	// maxBigIntBitsCap bounds a BigInt a guarded built-in makes whatever
	// the memory limit: 2**30 bits (128 MiB), the largest BigInt V8
	// allows.
	maxBigIntBitsCap = 1 << 30
	// maxBigIntDigits bounds the decimal digits BigInt() parses in one
	// call: parsing is quadratic in them (about 0.1 s for 100,000).
	maxBigIntDigits = 100_000
)

// maxBigIntBits is the largest BigInt, in bits, a guarded built-in may
// make: as many as the memory limit has, at most maxBigIntBitsCap.
func (x *exec) maxBigIntBits() float64 {
	return math.Min(x.maxBytes()*8, maxBigIntBitsCap)
}

// guardBigInt installs the guards on BigInt, BigInt.asUintN and
// BigInt.asIntN.
func (x *exec) guardBigInt() {
	ctor, ok := x.vm.Get("BigInt").(*goja.Object)
	if !ok {
		return
	}
	var rawBigInt func(goja.FunctionCall) goja.Value
	// BigInt is a function and not a constructor: its stand-in is a
	// plain function too.
	holder := ctor
	if fn, raw := x.wrapMethod(ctor, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		if s, ok := call.Argument(0).(goja.String); ok {
			x.checkBigIntText("BigInt", s.String())
		}
		return orig(call)
	}); fn != nil {
		rawBigInt = raw
		x.replaceBigInt(ctor, fn)
		holder = fn
	}
	for _, signed := range []bool{false, true} {
		name := "asUintN"
		if signed {
			name = "asIntN"
		}
		what := "BigInt." + name
		x.method(holder, name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			if len(call.Arguments) < 2 {
				return orig(call)
			}
			bitsV := call.Arguments[0].ToNumber() // converted once, here
			args := []goja.Value{bitsV, call.Arguments[1]}
			bits := toInteger(bitsV.ToFloat())
			if bits <= x.maxBigIntBits() || bits > 1<<53-1 {
				return orig(goja.FunctionCall{This: call.This, Arguments: args})
			}
			// More bits than a BigInt may have: the result is the value
			// itself when it fits, and too big otherwise.
			v := call.Arguments[1]
			switch t := v.(type) {
			case goja.String:
				x.checkBigIntText(what, t.String())
				if rawBigInt != nil {
					v = rawBigInt(goja.FunctionCall{Arguments: []goja.Value{t}})
				}
			case *goja.Object:
				x.throwRange(fmt.Sprintf("%s of %.0f bits: more than the %.0f a BigInt may have under the memory limit; pass a BigInt, or fewer bits",
					what, bits, x.maxBigIntBits()))
			}
			n, ok := v.Export().(*big.Int)
			if !ok {
				if b, isBool := v.Export().(bool); isBool {
					n = big.NewInt(0)
					if b {
						n.SetInt64(1)
					}
				} else {
					return orig(goja.FunctionCall{This: call.This, Arguments: args}) // throws its TypeError
				}
			}
			if fitsBits(n, bits, signed) {
				return x.vm.ToValue(n)
			}
			x.throwRange(fmt.Sprintf("%s would make a BigInt of %.0f bits, more than the %.0f the memory limit allows; use fewer bits",
				what, bits, x.maxBigIntBits()))
			return nil
		})
	}
}

// replaceBigInt makes fn, the stand-in of the BigInt function ctor, the
// global BigInt and BigInt.prototype.constructor.
func (x *exec) replaceBigInt(ctor, fn *goja.Object) {
	// Own keys in the original's order: name, length, prototype, asIntN,
	// asUintN.
	if l := fn.Get("length"); l != nil && fn.Delete("length") == nil {
		_ = fn.DefineDataProperty("length", l, goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	if proto, ok := ctor.Get("prototype").(*goja.Object); ok {
		_ = fn.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		_ = proto.DefineDataProperty("constructor", fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	for _, k := range []string{"asIntN", "asUintN"} {
		if v := ctor.Get(k); v != nil {
			_ = fn.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
	}
	_ = x.vm.GlobalObject().DefineDataProperty("BigInt", fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// fitsBits reports whether n is unchanged by BigInt.asUintN(bits, n)
// (BigInt.asIntN when signed).
func fitsBits(n *big.Int, bits float64, signed bool) bool {
	if !signed {
		return n.Sign() >= 0 && float64(n.BitLen()) <= bits
	}
	if n.Sign() >= 0 {
		return float64(n.BitLen()) < bits
	}
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	return float64(m.BitLen()) < bits
}

// checkBigIntText throws if parsing s as a BigInt (StringToBigInt) would
// take too long or make too big a BigInt.
func (x *exec) checkBigIntText(what, s string) {
	t := strings.TrimSpace(s)
	if len(t) > 2 && t[0] == '0' {
		perDigit := map[byte]float64{'x': 4, 'X': 4, 'o': 3, 'O': 3, 'b': 1, 'B': 1}[t[1]]
		if perDigit > 0 {
			if bits := float64(len(t)-2) * perDigit; bits > x.maxBigIntBits() {
				x.throwRange(fmt.Sprintf("%s of a string of %d digits: more bits than the %.0f a BigInt may have under the memory limit",
					what, len(t)-2, x.maxBigIntBits()))
			}
			return
		}
	}
	if len(t) > maxBigIntDigits {
		x.throwRange(fmt.Sprintf("%s of a string of %d characters: more than the %d decimal digits one call may parse; split the number",
			what, len(t), maxBigIntDigits))
	}
}
