package tsdecl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/testenv"
)

// tscTimeout bounds one compiler run; generous for a loaded machine.
const tscTimeout = 2 * time.Minute

func TestMain(m *testing.M) { os.Exit(testenv.SkipReport(m).Run()) }

// tscCommand returns the TypeScript compiler installed by `npm ci` at the
// module root (see testenv.NodeBin: a skip without it, a failure in CI).
func tscCommand(t *testing.T) string {
	t.Helper()
	return testenv.NodeBin(t, "tsc")
}

// runTSC type-checks files in dir and returns the compiler's output and
// whether it succeeded.
func runTSC(t *testing.T, tsc, dir string, files ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), tscTimeout)
	defer cancel()
	args := append([]string{"--noEmit", "--strict", "--target", "es2022", "--lib", "es2022", "--pretty", "false"}, files...)
	cmd := exec.CommandContext(ctx, tsc, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tsc did not finish within %v", tscTimeout)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running tsc: %v\n%s", err, out)
	}
	return string(out), err == nil
}

// wrapScript turns a script body into a TypeScript module the way ptc runs
// it: the body of an async function.
func wrapScript(body string) string {
	return "async function main() {\n" + body + "\n}\nexport {};\n"
}

var expectRE = regexp.MustCompile(`(?m)^// expect: (TS\d+)\s*$`)

// TestTypeCheck compiles every fixture's declarations with tsc together with
// the usage scripts in testdata/tsc that target it: <fixture>.<case>.ts must
// type-check, <fixture>.<case>.fail.ts must fail with the error code named
// on its "// expect: TSnnnn" line.
func TestTypeCheck(t *testing.T) {
	tsc := tscCommand(t)
	for _, path := range fixtures(t) {
		fixtureName := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(fixtureName, func(t *testing.T) {
			decl, err := loadFixture(t, path).generate()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.d.ts"), []byte(decl), 0o644); err != nil {
				t.Fatal(err)
			}
			scripts, err := filepath.Glob(filepath.Join("testdata", "tsc", fixtureName+".*.ts"))
			if err != nil {
				t.Fatal(err)
			}
			var passing []string
			var failing []string
			for _, s := range scripts {
				body, err := os.ReadFile(s)
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(s)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapScript(string(body))), 0o644); err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(name, ".fail.ts") {
					failing = append(failing, name)
				} else {
					passing = append(passing, name)
				}
			}
			out, ok := runTSC(t, tsc, dir, append([]string{"tools.d.ts"}, passing...)...)
			if !ok {
				t.Fatalf("declarations and scripts %v do not type-check:\n%s\ndeclarations:\n%s", passing, out, decl)
			}
			if len(failing) == 0 {
				return
			}
			// Every failing script is a module of its own, so one run
			// checks them all: each must report its expected error.
			out, ok = runTSC(t, tsc, dir, append([]string{"tools.d.ts"}, failing...)...)
			if ok {
				t.Fatalf("scripts %v type-check; each should fail", failing)
			}
			if strings.Contains(out, "tools.d.ts(") {
				t.Fatalf("the declarations themselves fail:\n%s", out)
			}
			for _, name := range failing {
				t.Run(strings.TrimSuffix(name, ".ts"), func(t *testing.T) {
					body, err := os.ReadFile(filepath.Join("testdata", "tsc", name))
					if err != nil {
						t.Fatal(err)
					}
					m := expectRE.FindStringSubmatch(string(body))
					if m == nil {
						t.Fatalf("%s has no // expect: TSnnnn line", name)
					}
					found := false
					for _, line := range strings.Split(out, "\n") {
						if strings.HasPrefix(line, name+"(") && strings.Contains(line, "error "+m[1]+":") {
							found = true
						}
					}
					if !found {
						t.Errorf("want error %s in %s, got:\n%s", m[1], name, out)
					}
				})
			}
		})
	}
}
