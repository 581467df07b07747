package js

import (
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestPanicFaultHidesGoText: a Go runtime error raised inside goja while
// it ran the script is the script's SCRIPT_ERROR, in ptc's words; Go's
// text stays in the cause, for the operator's logs.
func TestPanicFaultHidesGoText(t *testing.T) {
	var r any
	func() {
		defer func() { r = recover() }()
		n := -1
		_ = make([]byte, n)
	}()
	stack := []byte("goroutine 1 [running]:\npanic({0x0, 0x0})\n\t/go/src/runtime/panic.go:1 +0x1\n" +
		"github.com/dop251/goja.(*Runtime).builtin(...)\n\t/goja/builtin.go:1 +0x1\n")
	fe := panicFault(r, stack)
	if fe.Kind != fault.KindScript {
		t.Fatalf("kind %s, want SCRIPT_ERROR", fe.Kind)
	}
	if strings.Contains(fe.Message, "makeslice") || strings.Contains(fe.Message, "runtime error") {
		t.Fatalf("message %q shows Go's text", fe.Message)
	}
	if fe.Cause == nil || !strings.Contains(fe.Cause.Error(), "makeslice") {
		t.Fatalf("cause %v lost Go's text", fe.Cause)
	}
}
