package ts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNestingChild transpiles the source named by PTC_TS_PROBE and prints
// the outcome; it runs only as the child process of TestDeepNesting.
func TestNestingChild(t *testing.T) {
	file := os.Getenv("PTC_TS_PROBE")
	if file == "" {
		t.Skip("runs as the child process of TestDeepNesting")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, err = transpile(string(b))
	fmt.Printf("outcome: %v\n", err)
}

// TestDeepNesting: TypeScript nested deeply enough to overflow the Go
// stack in esbuild's parser (operator chains, unary chains, nested
// statements) is refused with a SyntaxError, in a child process that must
// survive.
func TestDeepNesting(t *testing.T) {
	r := strings.Repeat
	cases := []struct{ name, src string }{
		{"unary chain", "return " + r("!", 3e5) + "1"},
		{"member chain", "return a" + r(".b", 3e5)},
		{"assignments", r("a=", 3e5) + "1"},
		{"call chain", "f" + r("()", 3e5)},
		{"conditionals", r("a?b:", 3e5) + "c"},
		{"else if", r("if(a){}else ", 2e5) + "{}"},
		{"typeof", "return " + r("typeof ", 2e5) + "1"},
		{"brackets", "return " + r("[", 3e5) + r("]", 3e5)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "src.ts")
			if err := os.WriteFile(file, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestNestingChild$", "-test.v")
			cmd.Env = append(os.Environ(), "PTC_TS_PROBE="+file)
			out, err := cmd.CombinedOutput()
			if err != nil {
				msg := string(out)
				if len(msg) > 500 {
					msg = msg[:500]
				}
				t.Fatalf("the transpiler crashed the process (%v): %s", err, msg)
			}
			if !strings.Contains(string(out), "outcome: syntax error: the ") || !strings.Contains(string(out), "nests") {
				t.Fatalf("no nesting error: %s", out)
			}
		})
	}
}
