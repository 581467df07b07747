package ptc_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/internal/tsdecl"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// TestTypeScriptExamplesTypeCheck type-checks every examples/*.ts script
// against the declarations ptc generates for the demo tools, with the real
// TypeScript compiler (installed by npm ci; required in CI).
func TestTypeScriptExamplesTypeCheck(t *testing.T) {
	tsc := testenv.NodeBin(t, "tsc")
	var defs []tools.Definition
	for _, tl := range demo.Tools() {
		defs = append(defs, tl.Definition)
	}
	decl, err := tsdecl.Generate(defs, tsdecl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ptc.d.ts"), []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob("examples/*.ts")
	if len(scripts) == 0 {
		t.Fatal("no TypeScript examples")
	}
	files := []string{"ptc.d.ts"}
	for _, s := range scripts {
		body, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(s), ".ts") + ".check.ts"
		wrapped := "async function main() {\n" + string(body) + "\n}\nexport {};\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapped), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tsc, append([]string{"--noEmit", "--strict", "--target", "es2022", "--lib", "es2022", "--pretty", "false"}, files...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}
