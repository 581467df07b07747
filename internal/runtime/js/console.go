package js

import (
	"strings"

	"github.com/dop251/goja"
)

// consoleObject builds `console`: log, info, warn, error and debug write to
// the execution's capped log buffer.
func (x *exec) consoleObject() goja.Value {
	vm := x.vm
	obj := vm.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		level := level
		_ = obj.Set(level, x.native(level, 0, func(call goja.FunctionCall) goja.Value {
			if x.job.Logs == nil || x.job.Logs.Full() {
				return goja.Undefined()
			}
			var b strings.Builder
			for i, a := range call.Arguments {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(x.format(a))
				if int64(b.Len()) > x.job.Limits.MaxLogBytes && x.job.Limits.MaxLogBytes > 0 {
					break
				}
			}
			x.job.Logs.Write(level, b.String())
			return goja.Undefined()
		}))
	}
	return obj
}

// format renders one console argument: strings as they are, other values
// as JSON where possible.
func (x *exec) format(v goja.Value) string {
	if s, ok := v.(goja.String); ok {
		return s.String()
	}
	if obj, ok := v.(*goja.Object); ok && !isErrorObject(v) {
		if _, isFn := goja.AssertFunction(obj); !isFn {
			if j, err := x.stringify(obj); err == nil && j != nil && !goja.IsUndefined(j) {
				return j.String()
			} else if err != nil && isUncatchable(err) {
				panic(err)
			}
		}
	}
	var s string
	if ex := x.vm.Try(func() { s = v.String() }); ex != nil {
		return "[value that cannot be printed]"
	}
	return s
}
