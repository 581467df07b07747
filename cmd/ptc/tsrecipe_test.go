package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

// TestREADMETypeCheckRecipe runs the README's recipe for type-checking a
// TypeScript script, as written, with the built ptc for `go run
// ./cmd/ptc` and the compiler npm ci installs for `npx tsc`: the example
// type-checks, and a script calling a tool with a wrong argument does
// not.
func TestREADMETypeCheckRecipe(t *testing.T) {
	tsc := testenv.NodeBin(t, "tsc")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sh\n(d=\\$\\(mktemp -d\\)\n.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no type-check recipe (a sh block starting d=$(mktemp -d))")
	}
	recipe := strings.NewReplacer("go run ./cmd/ptc", ptcBin, "npx tsc", tsc).Replace(string(m[1]))
	if !strings.Contains(recipe, "examples/expenses.ts") {
		t.Fatalf("the recipe does not check examples/expenses.ts:\n%s", recipe)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.ts")
	if err := os.WriteFile(bad, []byte(`return await tools.get_team_members({department: 42});`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, script string
		ok           bool
	}{
		{"the example type-checks", "examples/expenses.ts", true},
		{"a wrong argument does not", bad, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(recipe, "examples/expenses.ts", tt.script))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // where mktemp -d makes its directory
			out, err := cmd.CombinedOutput()
			if tt.ok && err != nil {
				t.Fatalf("the recipe failed: %v\n%s", err, out)
			}
			if !tt.ok && (err == nil || !strings.Contains(string(out), "script.ts(1,")) {
				t.Fatalf("the recipe accepted a wrong argument: %v\n%s", err, out)
			}
		})
	}
}
