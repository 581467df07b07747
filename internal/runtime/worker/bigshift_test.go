package worker

import (
	"context"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/fault"
)

// TestHugeBigIntShiftIsAScriptError: a BigInt shift by an amount no value
// can hold — folded by goja's compiler when it is a constant, computed
// when it runs otherwise — is the script's error, in every engine: it
// neither takes a worker down nor ends as INTERNAL.
func TestHugeBigIntShiftIsAScriptError(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"constant", `return 1n << (1n << 62n)`, "constant too large"},
		{"constant right shift", `return 1n >> -(1n << 62n)`, "constant too large"},
		{"computed", `let n = 1n << 62n; return 1n << n`, "failed on what the script did"},
	}
	engines := everyEngine(t)
	for _, c := range cases {
		for _, e := range engines {
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				job, _ := newJob(t, c.src, testLimits())
				out := e.eng.Run(context.Background(), job)
				if out.Err == nil || out.Err.Kind != fault.KindScript || !strings.Contains(out.Err.Message, c.want) {
					t.Fatalf("error %v, want SCRIPT_ERROR saying %q", out.Err, c.want)
				}
			})
		}
		// The worker that ran it still serves.
		job, _ := newJob(t, `return 1`, testLimits())
		if out := engines[1].eng.Run(context.Background(), job); out.Err != nil || string(out.Result) != "1" {
			t.Fatalf("after %s: %s %v", c.name, out.Result, out.Err)
		}
	}
}
