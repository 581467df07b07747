package ptc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitIgnored reports whether git ignores path (relative to the repository
// root) by the rules of .gitignore, whether or not the file exists. It
// skips the test outside a git checkout.
func gitIgnored(t *testing.T, path string) bool {
	t.Helper()
	if err := exec.Command("git", "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	err := exec.Command("git", "check-ignore", "-q", "--no-index", path).Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return false
	}
	if err != nil {
		t.Fatalf("git check-ignore %s: %v", path, err)
	}
	return true
}

// TestGitignoreCoversBuildOutputs checks that every binary a
// `go build ./cmd/NAME` leaves in the repository's root, and every file the
// README's commands and CI leave there, is git-ignored.
func TestGitignoreCoversBuildOutputs(t *testing.T) {
	mains, err := filepath.Glob("cmd/*/main.go")
	if err != nil || len(mains) < 4 {
		t.Fatalf("commands: %v %v", mains, err)
	}
	var outputs []string
	for _, m := range mains {
		outputs = append(outputs, filepath.Base(filepath.Dir(m)))
	}
	outputs = append(outputs, "guest.wasm", "expenses.jsonl", "report.xml", "ptc-test.xml")
	for _, o := range outputs {
		if !gitIgnored(t, o) {
			t.Errorf("%s is not git-ignored: add /%s to .gitignore", o, o)
		}
	}
	// The rules are anchored to the root: a directory of that name, such
	// as cmd/ptc, is not ignored.
	for _, m := range mains {
		if gitIgnored(t, m) {
			t.Errorf("%s is git-ignored", m)
		}
	}
}

// TestCIWritesInsideItsCheckout checks that .ci/run writes the JUnit
// report of `ptc test` inside its own checkout (where concurrent runs do
// not share it), to a git-ignored file.
func TestCIWritesInsideItsCheckout(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--junit\s+(\S+)`).FindAllStringSubmatch(string(ci), -1)
	if len(m) == 0 {
		t.Fatal(".ci/run writes no JUnit report")
	}
	for _, x := range m {
		p := strings.Trim(x[1], `"'`)
		if filepath.IsAbs(p) || strings.HasPrefix(p, "$") || strings.HasPrefix(p, "..") {
			t.Errorf(".ci/run writes its JUnit report to %s, outside its checkout", p)
			continue
		}
		if !gitIgnored(t, p) {
			t.Errorf(".ci/run writes %s, which is not git-ignored", p)
		}
	}
}

// TestDocsUseRepositoryPaths checks that the documentation and scripts
// name files by paths relative to the repository, never by where a
// developer's machine keeps them.
func TestDocsUseRepositoryPaths(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	scripts, _ := filepath.Glob("scripts/*.sh")
	files = append(append(files, scripts...), "README.md", ".ci/run")
	machine := regexp.MustCompile(`(^|[\s"'(=` + "`" + `])/(work|root|home)/\S*`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if p := machine.FindString(line); p != "" {
				t.Errorf("%s:%d names a machine path, %s: use a path relative to the repository", f, i+1, strings.TrimSpace(p))
			}
		}
	}
	b, err := os.ReadFile("docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "`bash ../shared/peers/install.sh`") {
		t.Error("docs/benchmarks.md does not name the comparison kit as ../shared/peers")
	}
}

// TestReadmeCommandsRunInAFreshClone checks the README's shell commands as
// a new user copies them into a fresh clone: each runs a program the clone
// has (go run ./cmd/…, go test, npm ci; no installed binary on the PATH),
// and every file of the repository they name exists.
func TestReadmeCommandsRunInAFreshClone(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) < 4 {
		t.Fatalf("%d sh blocks in the README", len(blocks))
	}
	starts := []string{"go run ./cmd/", "go test ", "go build ", "npm ci"}
	paths := regexp.MustCompile(`(?:^|\s)((?:\./)?(?:examples|cmd)/\S+)`)
	for _, block := range blocks {
		if strings.HasPrefix(block[1], "d=$(mktemp -d)\n") {
			// The type-check recipe: cmd/ptc's TestREADMETypeCheckRecipe
			// runs it as written.
			continue
		}
		for _, line := range strings.Split(block[1], "\n") {
			cmd := strings.TrimSpace(line)
			if i := strings.Index(cmd, "#"); i >= 0 {
				cmd = strings.TrimSpace(cmd[:i])
			}
			if cmd == "" {
				continue
			}
			ok := false
			for _, s := range starts {
				ok = ok || strings.HasPrefix(cmd, s)
			}
			if !ok {
				t.Errorf("README command %q does not run in a fresh clone: use go run ./cmd/NAME", cmd)
			}
			for _, m := range paths.FindAllStringSubmatch(cmd, -1) {
				if _, err := os.Stat(strings.TrimSuffix(m[1], "/...")); err != nil {
					t.Errorf("README command %q names %s: %v", cmd, m[1], err)
				}
			}
		}
	}
}

// TestLicenceAndNotice checks that the repository carries the Apache-2.0
// licence and that NOTICE is what scripts/gen-notice.sh writes: every
// module linked into ptcd and ptc, with its licence, so that a new or
// updated dependency cannot ship without its notice.
func TestLicenceAndNotice(t *testing.T) {
	lic, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION"} {
		if !strings.Contains(string(lic), want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
	notice, err := os.ReadFile("NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "scripts/gen-notice.sh", "--stdout").Output()
	if err != nil {
		t.Fatalf("scripts/gen-notice.sh: %v", err)
	}
	if string(out) != string(notice) {
		t.Errorf("NOTICE is not what scripts/gen-notice.sh writes: run scripts/gen-notice.sh and commit NOTICE")
	}
	for _, want := range []string{"github.com/dop251/goja", "github.com/evanw/esbuild", "github.com/tetratelabs/wazero", "The Go standard library"} {
		if !strings.Contains(string(notice), want) {
			t.Errorf("NOTICE does not name %s", want)
		}
	}
}
