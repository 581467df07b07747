package prompt

import (
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/limits"
)

// TestPythonPrompt: the Python prompt states Python's contract and the
// limits, and nothing of JavaScript's.
func TestPythonPrompt(t *testing.T) {
	p := Prompt(Options{Python: true, TypeScript: true, Limits: limits.Limits{Timeout: 90 * time.Second, MaxToolCalls: 7, MaxOutputBytes: 1 << 20}})
	for _, want := range []string{"Python 3.12", "top-level await", "`return <value>`", "tools[\"shop.price\"]", "asyncio.gather", "ToolError", ".code",
		"`input`", "print()", "1m30s in total, at most 7 tool calls, result at most 1 MiB"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	for _, not := range []string{"Promise", "console.log", "JavaScript"} {
		if strings.Contains(p, not) {
			t.Errorf("the Python prompt mentions %q:\n%s", not, p)
		}
	}
}
