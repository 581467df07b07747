package js

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/ptcrun/ptc/internal/jsnest"
)

// Regular expressions. goja runs a pattern on Go's regexp package when it
// can (linear time, no timeout) and on regexp2, a backtracking engine,
// when the pattern needs it (backreferences, lookaround). regexp2 stops a
// match after RegexpMatchTimeout, and goja then reports "no match": a
// script would get a wrong answer (false, null, -1, an unchanged string).
//
// ptc therefore recognises the patterns that run on regexp2 (every
// pattern a script can create passes a check: literals when their code is
// scanned, the RegExp constructor, String.prototype.match, matchAll and
// search, RegExp.prototype.compile) and, once one exists, wraps
// RegExp.prototype.exec and test: a call that finds nothing after running
// at least regexpTimeoutAfter throws a catchable RegExpTimeoutError (a
// RangeError), with regexp2's clock kept current (freshRegexpClock). Wrapping exec turns off goja's fast paths for the
// RegExp.prototype[Symbol.*] methods, which then call exec once per match,
// so every match of every method goes through the check; scripts whose
// patterns all run on Go's regexp keep the fast paths and cannot time out.
//
// The check also bounds a pattern's group nesting (goja's pattern
// translator recurses on it).

// regexpTimeoutAfter is how long a call must have run, finding nothing,
// to count as cut off by regexp2's match timeout. regexp2 measures time
// with a clock a background goroutine updates every DefaultClockPeriod
// (100 ms), so its deadline falls between the timeout and a period after;
// half the timeout leaves room for a clock that runs late on a loaded
// machine. A match that legitimately finds nothing after running this
// long is reported as cut off too: a loud error, never a wrong answer.
const regexpTimeoutAfter = RegexpMatchTimeout / 2

// regexp2's clock stops a second after the last deadline it serves and,
// when it restarts, its time is stale until its goroutine first ticks: a
// match started then gets a deadline in the past and is cut off at once,
// whatever its timeout. regexpClock keeps the clock running while
// executions match, and waits for a tick after a restart.
var regexpClock struct {
	mu        sync.Mutex
	lastTouch time.Time
}

// clockProbe is matched to extend regexp2's clock: each timed match sets a
// deadline, and the clock runs until a second past the last one.
var clockProbe = func() *regexp2.Regexp {
	re := regexp2.MustCompile("x", regexp2.None)
	re.MatchTimeout = RegexpMatchTimeout
	return re
}()

// freshRegexpClock makes sure regexp2's clock is running and current
// before a match.
func freshRegexpClock() {
	regexpClock.mu.Lock()
	defer regexpClock.mu.Unlock()
	since := time.Since(regexpClock.lastTouch)
	if since < RegexpMatchTimeout {
		return // the last touch keeps it running well past now
	}
	_, _ = clockProbe.MatchString("x")
	regexpClock.lastTouch = time.Now()
	if since > RegexpMatchTimeout+time.Second {
		// The clock may have stopped: let it tick once.
		time.Sleep(regexp2.DefaultClockPeriod + regexp2.DefaultClockPeriod/10)
	}
}

// guardRegExp guards the RegExp constructor (and RegExp.prototype's
// constructor and compile): each pattern passes checkPattern.
func (x *exec) guardRegExp() {
	ctor, ok := x.vm.Get("RegExp").(*goja.Object)
	if !ok {
		return
	}
	check := func(args []goja.Value) []goja.Value {
		if len(args) == 0 {
			return args
		}
		out := append([]goja.Value(nil), args...)
		flags := ""
		if len(args) > 1 && !goja.IsUndefined(args[1]) {
			out[1] = args[1].ToString()
			flags = out[1].String()
		}
		switch p := args[0].(type) {
		case *goja.Object:
			if p.ClassName() == "RegExp" {
				return out // an existing pattern, already checked
			}
			// A RegExp-like object gives its source (and flags); anything
			// else its string. Either is read once and passed on as a
			// string.
			if m := p.GetSymbol(goja.SymMatch); m != nil && m.ToBoolean() {
				out[0] = nilSafe(p.Get("source")).ToString()
				if len(args) < 2 || goja.IsUndefined(args[1]) {
					f := nilSafe(p.Get("flags")).ToString()
					out = append(out[:1], f)
					flags = f.String()
				}
			} else {
				out[0] = p.ToString()
			}
			x.checkPattern("RegExp", out[0].String(), flags)
		default:
			if !goja.IsUndefined(p) {
				out[0] = p.ToString()
				x.checkPattern("RegExp", out[0].String(), flags)
			}
		}
		return out
	}
	construct, _ := goja.AssertConstructor(ctor)
	var p *goja.Object
	p = x.fnProxy(ctor, &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, _ goja.Value, args []goja.Value) goja.Value {
			if len(args) > 0 {
				if o, ok := args[0].(*goja.Object); ok && o.ClassName() == "RegExp" && (len(args) < 2 || goja.IsUndefined(args[1])) {
					return o // RegExp(re) is re itself
				}
			}
			v, err := construct(nil, check(args)...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
		Construct: func(_ *goja.Object, args []goja.Value, newTarget *goja.Object) *goja.Object {
			if newTarget == nil || newTarget == p {
				newTarget = ctor
			}
			v, err := construct(newTarget, check(args)...)
			if err != nil {
				rethrow(err)
			}
			return v
		},
	})
	_ = x.vm.GlobalObject().DefineDataProperty("RegExp", p, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	proto, _ := ctor.Get("prototype").(*goja.Object)
	if proto == nil {
		return
	}
	_ = proto.DefineDataProperty("constructor", p, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	x.method(proto, "compile", func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
		call.Arguments = check(call.Arguments)
		return orig(call)
	})
}

// checkPattern bounds a pattern's nesting (a SyntaxError past
// jsnest.Max) and, if it runs on regexp2, installs the timeout checks
// before it can run.
func (x *exec) checkPattern(what, pattern, flags string) {
	if err := jsnest.CheckRegExp(pattern); err != nil {
		x.throwSyntax(fmt.Sprintf("%s: the pattern nests groups more than %d levels deep", what, jsnest.Max))
	}
	if backtracking(pattern, flags) {
		x.install(groupBacktrack)
	}
}

// backtracking reports whether goja would run pattern on regexp2 rather
// than on Go's regexp package. It errs towards yes: goja converts
// patterns with non-ASCII text or escapes before deciding, and those are
// counted as regexp2 patterns here.
func backtracking(pattern, flags string) bool {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] >= 0x80 {
			return true
		}
	}
	if strings.Contains(pattern, `\u`) {
		return true
	}
	re2, err := parser.TransformRegExp(pattern, strings.Contains(flags, "s"), strings.Contains(flags, "u"))
	if err != nil {
		return true
	}
	_, err = regexp.Compile(re2)
	return err != nil
}

// guardBacktracking wraps RegExp.prototype.exec and test so that a match
// regexp2 cut off throws a RegExpTimeoutError.
func (x *exec) guardBacktracking() {
	x.install(groupRegExp)
	proto := x.proto("RegExp")
	if w, ok := x.vm.Get("RegExp").(*goja.Object); ok {
		if o := x.wrappers[w]; o != nil {
			proto, _ = o.Get("prototype").(*goja.Object)
		}
	}
	timed := func(noMatch func(goja.Value) bool) func(goja.FunctionCall, func(goja.FunctionCall) goja.Value) goja.Value {
		return func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			freshRegexpClock()
			start := time.Now()
			res := orig(call)
			if noMatch(res) && time.Since(start) >= regexpTimeoutAfter {
				x.throwRegExpTimeout(call.This)
			}
			return res
		}
	}
	x.method(proto, "exec", timed(func(v goja.Value) bool { return goja.IsNull(v) }))
	x.method(proto, "test", timed(func(v goja.Value) bool { return !v.ToBoolean() }))
}

// throwRegExpTimeout throws the RegExpTimeoutError of re.
func (x *exec) throwRegExpTimeout(re goja.Value) {
	desc := "a regular expression"
	if obj, ok := re.(*goja.Object); ok && obj.ClassName() == "RegExp" {
		if src := obj.Get("source"); src != nil {
			s := src.String()
			if len(s) > 100 {
				s = s[:100] + "…"
			}
			desc = "the regular expression /" + s + "/"
		}
	}
	err := x.intrinsicError(x.rangeError(), fmt.Sprintf("%s ran too long on its input and was stopped (the limit is %s a match); "+
		"simplify it (nested quantifiers and backreferences backtrack) or match a smaller input", desc, RegexpMatchTimeout))
	if obj, ok := err.(*goja.Object); ok {
		_ = obj.DefineDataProperty("name", x.vm.ToValue("RegExpTimeoutError"), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	panic(err)
}

// guardStringPatterns wraps the String.prototype methods that make a
// regular expression from a string (match, matchAll, search): the string
// becomes the pattern, so it passes checkPattern first. Their argument is
// handled as the specification says — its own matcher method if it has
// one, otherwise a pattern converted to a string once.
func (x *exec) guardStringPatterns(proto *goja.Object) {
	for _, m := range []struct {
		name  string
		sym   *goja.Symbol
		flags string
	}{{"match", goja.SymMatch, ""}, {"matchAll", goja.SymMatchAll, "g"}, {"search", goja.SymSearch, ""}} {
		m := m
		x.method(proto, m.name, func(call goja.FunctionCall, orig func(goja.FunctionCall) goja.Value) goja.Value {
			arg := call.Argument(0)
			if call.This == nil || goja.IsUndefined(call.This) || goja.IsNull(call.This) || goja.IsUndefined(arg) || goja.IsNull(arg) {
				return orig(call)
			}
			if fn, ok := goja.AssertFunction(arg.ToObject(x.vm).GetSymbol(m.sym)); ok {
				if o, isObj := arg.(*goja.Object); isObj && o.ClassName() == "RegExp" {
					return orig(call) // a RegExp: its pattern is checked already
				}
				v, err := fn(arg, call.This)
				if err != nil {
					rethrow(err)
				}
				return v
			}
			pattern := arg.ToString()
			x.install(groupRegExp)
			x.checkPattern("String.prototype."+m.name, pattern.String(), m.flags)
			return orig(goja.FunctionCall{This: call.This, Arguments: []goja.Value{pattern}})
		})
	}
}
