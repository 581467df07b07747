package js

import (
	"errors"
	"fmt"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/ptcrun/ptc/internal/fault"
)

// uncaught classifies a rejection of the main promise.
func (x *exec) uncaught(v goja.Value) *fault.Error {
	if obj, ok := v.(*goja.Object); ok {
		if ce, ok := x.callErrs[obj]; ok {
			fe := fault.New(ce.Kind(), "uncaught %s from tool %s (code %s): %s", ce.Name, ce.Tool, ce.Code, ce.Message)
			if fe.Kind.IsBreach() {
				fe = fault.Breach(fe.Kind, ce.Limit, ce.Observed, "%s", fe.Message)
			}
			fe.Tool = ce.Tool
			fe.Line, fe.Column = x.position(v)
			fe.Stack = x.stack(v)
			return fe
		}
	}
	fe := fault.New(fault.KindScript, "uncaught %s", x.describe(v))
	if !isErrorObject(v) {
		fe.Message = "uncaught exception: " + x.describe(v)
	}
	fe.Line, fe.Column = x.position(v)
	fe.Stack = x.stack(v)
	if isErrorObject(v) {
		fe.Message = "uncaught " + x.nullInputMessage(strings.TrimPrefix(fe.Message, "uncaught "), fe.Line, fe.Column)
	}
	return fe
}

// reasonError is the error of an execution interrupted for reason.
func (x *exec) reasonError(reason interruptReason) *fault.Error {
	switch reason {
	case reasonCPU:
		return x.cpuError()
	case reasonTimeout:
		return x.timeoutError()
	default:
		return fault.New(fault.KindCancelled, "the execution was cancelled by the caller")
	}
}

// classify turns an error from goja into a fault.
func (x *exec) classify(err error) *fault.Error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		reason, _ := ie.Value().(interruptReason)
		return x.reasonError(reason)
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		fe := fault.New(fault.KindScript, "RangeError: maximum call stack size exceeded (%d frames); use iteration instead of deep recursion", x.e.maxStack)
		if fr := so.Stack(); len(fr) > 0 {
			p := fr[0].Position()
			fe.Line, fe.Column = x.mapPosition(p.Line, p.Column)
		}
		return fe
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return x.uncaught(ex.Value())
	}
	return &fault.Error{Kind: fault.KindInternal, Message: "internal error in the JavaScript engine", Cause: err}
}

// panicFault classifies a Go panic that escaped the engine. A runtime
// error raised inside goja (or a library it calls) while it ran the
// script is the script's doing — the same script fails the same way, so
// it is a SCRIPT_ERROR, not the INTERNAL that says "run it again"; a panic
// in ptc's own code is INTERNAL. The message never holds Go's text (the
// cause keeps it for the operator's logs).
func panicFault(r any, stack []byte) *fault.Error {
	cause := fmt.Errorf("panic: %v\n%s", r, stack)
	if _, ok := r.(goruntime.Error); ok && !ptcOrigin(stack) {
		return &fault.Error{Kind: fault.KindScript, Cause: cause,
			Message: "the JavaScript engine failed on what the script did; change the operation that failed"}
	}
	return &fault.Error{Kind: fault.KindInternal, Message: "internal error in the JavaScript engine", Cause: cause}
}

// ptcOrigin reports whether the first panic in a goroutine stack (as
// debug.Stack prints it, innermost frame first; repanics print the
// earlier panic lower) was raised in ptc's own code.
func ptcOrigin(stack []byte) bool {
	lines := strings.Split(string(stack), "\n")
	origin := ""
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+2 < len(lines) {
			origin = lines[i+2] // the function after panic's file line
		}
	}
	// Frames of the runtime (index checks, conversions) count as their
	// caller's: skip them.
	for i := 0; i < len(lines); i++ {
		if lines[i] != origin {
			continue
		}
		for j := i; j < len(lines); j += 2 {
			if !strings.HasPrefix(lines[j], "runtime.") {
				return strings.HasPrefix(lines[j], "github.com/ptcrun/ptc/")
			}
		}
	}
	return true
}

// cpuError is the CPU_LIMIT fault.
func (x *exec) cpuError() *fault.Error {
	return fault.Breach(fault.KindCPULimit, x.job.Limits.CPUTime.Nanoseconds(), x.busy.Nanoseconds(),
		"the script used more than its %s of CPU time", x.job.Limits.CPUTime)
}

func isUncatchable(err error) bool {
	var ie *goja.InterruptedError
	var so *goja.StackOverflowError
	return errors.As(err, &ie) || errors.As(err, &so)
}

// isErrorObject reports whether v is an Error (of any built-in error
// type or a subclass), from goja's own class: it runs no script code (a
// revoked proxy, whose class goja cannot tell, is not an Error).
func isErrorObject(v goja.Value) (is bool) {
	obj, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	defer func() {
		if recover() != nil {
			is = false
		}
	}()
	return obj.ClassName() == "Error"
}

// maxDescribe bounds the text describing a thrown value.
const maxDescribe = 2000

// describe renders a thrown value without letting a hostile toString or
// getter escape: any exception while describing gives a placeholder.
func (x *exec) describe(v goja.Value) (s string) {
	defer func() {
		if recover() != nil {
			s = "[value that cannot be printed]"
		}
		if len(s) > maxDescribe {
			s = s[:maxDescribe] + "…"
		}
	}()
	if v == nil {
		return "undefined"
	}
	x.startCPU()
	defer x.stopCPU()
	if obj, ok := v.(*goja.Object); ok && !isErrorObject(v) {
		if j, err := x.stringify(obj); err == nil && j != nil && !goja.IsUndefined(j) {
			return j.String()
		}
	}
	if ex := x.vm.Try(func() { s = v.String() }); ex != nil {
		return "[value that cannot be printed]"
	}
	if _, ok := v.(goja.String); ok {
		return strconv.Quote(s)
	}
	return s
}

// stackPositions caches, per compiled file name, the pattern of its
// positions in goja stack traces ("name:line:col(pc)").
var stackPositions sync.Map

func stackPos(file string) *regexp.Regexp {
	if re, ok := stackPositions.Load(file); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(file) + `:(\d+):(\d+)(?:\(\d+\))?`)
	stackPositions.Store(file, re)
	return re
}

// maxStackText bounds how much of an error's stack is read.
const maxStackText = 64 << 10

// stackOf returns the "stack" string of an Error, or "". The first read
// formats the stack, running the error's name and message getters: a
// getter that throws, a proxy, a stack that is not a string, give "".
func (x *exec) stackOf(v goja.Value) (s string) {
	if !isErrorObject(v) {
		return ""
	}
	obj := v.(*goja.Object)
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	var st goja.Value
	if x.vm.Try(func() { st = obj.Get("stack") }) != nil {
		return ""
	}
	str, ok := st.(goja.String)
	if !ok {
		return ""
	}
	if str.Length() > maxStackText {
		str = str.Substring(0, maxStackText)
	}
	return str.String()
}

// position returns the first script position in an error's stack.
func (x *exec) position(v goja.Value) (int, int) {
	m := stackPos(x.c.file).FindStringSubmatch(x.stackOf(v))
	if m == nil {
		return 0, 0
	}
	l, _ := strconv.Atoi(m[1])
	c, _ := strconv.Atoi(m[2])
	return x.mapPosition(l, c)
}

// mapPosition maps a position in the compiled code to the caller's source.
func (x *exec) mapPosition(line, col int) (int, int) {
	if line == 1 && x.c.col1 > 0 {
		col -= x.c.col1
		if col < 1 {
			col = 1
		}
	}
	if x.mapPos != nil {
		if l, c, ok := x.mapPos(line, col); ok {
			return l, c
		}
	}
	return line, col
}

// maxStackFrames bounds the frames reported in a stack.
const maxStackFrames = 20

// stack returns the script frames of an error's stack, positions mapped
// to the caller's source, native and internal frames dropped.
func (x *exec) stack(v goja.Value) string {
	raw := x.stackOf(v)
	if raw == "" {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "at ") || !strings.Contains(line, x.c.file) {
			continue
		}
		re := stackPos(x.c.file)
		line = re.ReplaceAllStringFunc(line, func(m string) string {
			sm := re.FindStringSubmatch(m)
			l, _ := strconv.Atoi(sm[1])
			c, _ := strconv.Atoi(sm[2])
			l, c = x.mapPosition(l, c)
			return fmt.Sprintf("%s:%d:%d", x.c.display, l, c)
		})
		b.WriteString(line)
		b.WriteByte('\n')
		if n++; n == maxStackFrames {
			break
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// syntaxError converts a goja parse or compile error.
func syntaxError(err error, col1 int, mapPos func(int, int) (int, int, bool)) *fault.Error {
	fe := &fault.Error{Kind: fault.KindSyntax, Cause: err}
	line, col := 0, 0
	var list parser.ErrorList
	var pe *parser.Error
	var se *goja.CompilerSyntaxError
	switch {
	case errors.As(err, &list) && len(list) > 0:
		fe.Message = "SyntaxError: " + list[0].Message
		line, col = list[0].Position.Line, list[0].Position.Column
	case errors.As(err, &pe):
		fe.Message = "SyntaxError: " + pe.Message
		line, col = pe.Position.Line, pe.Position.Column
	case errors.As(err, &se):
		fe.Message = "SyntaxError: " + se.Message
		if se.File != nil {
			p := se.File.Position(se.Offset)
			line, col = p.Line, p.Column
		}
	default:
		fe.Message = "SyntaxError: " + err.Error()
	}
	return positioned(fe, line, col, col1, mapPos)
}

// positioned sets fe's position from a 1-based line and column in the
// compiled code: the wrapper's columns on line 1 removed, then mapped to
// the caller's source. A line of 0 leaves fe without a position.
func positioned(fe *fault.Error, line, col, col1 int, mapPos func(int, int) (int, int, bool)) *fault.Error {
	if line <= 0 {
		return fe
	}
	if line == 1 && col1 > 0 {
		col -= col1
		if col < 1 {
			col = 1
		}
	}
	if mapPos != nil {
		if l, c, ok := mapPos(line, col); ok {
			line, col = l, c
		}
	}
	fe.Line, fe.Column = line, col
	return fe
}
