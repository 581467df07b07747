package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	passingSuite = "../../examples/tests"
	failingSuite = "../../examples/tests-failing"
)

func TestTestCommandPasses(t *testing.T) {
	code, stdout, stderr := ptcMain(t, "test", passingSuite, "-v")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, name := range []string{"expenses", "static-fixtures", "tool-error-caught", "cassette", "tool-call-limit"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` \(\d+m?s\)$`).MatchString(stdout) {
			t.Errorf("no PASS line for %s:\n%s", name, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^ok  \t\.\./\.\./examples/tests\t\d+\.\d{3}s \(\d+ passed\)$`).MatchString(stdout) {
		t.Fatalf("summary:\n%s", stdout)
	}
}

// Every case of the failing suite fails, with the message its name
// promises.
func TestTestCommandFailures(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, stdout, _ := ptcMain(t, "test", failingSuite, "--junit", junit, "--parallel", "3")
	if code != exitTestFailed {
		t.Fatalf("exit %d, want %d\n%s", code, exitTestFailed, stdout)
	}
	want := map[string][]string{
		"divergent-cassette": {
			"replay divergence at call #2 (get_expenses): the arguments differ from the recording",
			`recorded: {"member_id":"sup-01","quarter":"Q4"}`,
			`actual:   {"member_id":"sup-01","quarter":"Q3"}`,
			`/quarter: "Q4" → "Q3"`,
		},
		"missing-definition": {"fixtures.search: tool search has no definition: add it under definitions"},
		"no-expectation":     {"no-expectation.yaml has no expectation: add expect.result"},
		"no-fixture":         {`SCRIPT_ERROR at line 1:36: uncaught ToolError from tool get_team_members (code no_fixture): no fixture of get_team_members matches the arguments {"department":"marketing"}`},
		"schema-mismatch":    {"the result does not match expect.schema: /total: got string, want number"},
		"unexpected-success": {"want error SCRIPT_ERROR, but the script succeeded with 42"},
		"unknown-key":        {`unknown-key.yaml: line 4: unknown key "expected"`},
		"wrong-calls":        {"the tool calls differ from expect.calls:", "want: [get_team_members]", "got:  [get_budget_by_level]"},
		"wrong-kind":         {"want error TIMEOUT, got SCRIPT_ERROR at line 1:7: uncaught Error: boom"},
		"wrong-message":      {`the SCRIPT_ERROR message does not contain "kaboom"`, "got: uncaught Error: boom"},
		"wrong-result":       {"the result differs from the expected JSON (expected → actual):", "/limit: 2500 → 2000"},
		"unanswered-pause":   {"the execution paused again after the last step of resumes, waiting for get_budget_by_level (approval)"},
	}
	blocks := failBlocks(stdout)
	if len(blocks) != len(want) {
		t.Errorf("%d failed cases, want %d:\n%s", len(blocks), len(want), stdout)
	}
	for name, msgs := range want {
		b, ok := blocks[name]
		if !ok {
			t.Errorf("no --- FAIL: %s", name)
			continue
		}
		for _, m := range msgs {
			if !strings.Contains(b, m) {
				t.Errorf("%s: the failure lacks %q:\n%s", name, m, b)
			}
		}
	}
	if !strings.Contains(stdout, "FAIL\t../../examples/tests-failing\t") || !strings.Contains(stdout, "(0 passed, 12 failed)") {
		t.Errorf("summary:\n%s", stdout)
	}

	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &report); err != nil {
		t.Fatalf("junit: %v\n%s", err, raw)
	}
	s := report.Suites[0]
	if s.Tests != len(want) || s.Failures != len(want) || len(s.Cases) != len(want) {
		t.Fatalf("junit suite %s: %d tests, %d failures", s.Name, s.Tests, s.Failures)
	}
	for _, c := range s.Cases {
		if c.Failure == nil || !strings.Contains(c.Failure.Text, want[c.Name][0]) {
			t.Errorf("junit case %s: %+v", c.Name, c.Failure)
		}
	}
}

// failBlocks splits test output into the text of each --- FAIL block.
func failBlocks(out string) map[string]string {
	blocks := map[string]string{}
	name := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
			name, _, _ = strings.Cut(rest, " (")
			blocks[name] = ""
			continue
		}
		if name != "" && strings.HasPrefix(line, "    ") {
			blocks[name] += line + "\n"
		} else {
			name = ""
		}
	}
	return blocks
}

func TestTestCommandOptions(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"filter", []string{"test", failingSuite, "--run", "^wrong-(kind|result)$"}, exitTestFailed, "(0 passed, 2 failed)"},
		{"filter matching nothing", []string{"test", failingSuite, "--run", "^nothing$"}, exitOK, "[no cases match --run ^nothing$]"},
		{"one passing case of a suite", []string{"test", passingSuite, "--run", "static"}, exitOK, "(1 passed)"},
		{"bad regexp", []string{"test", "--run", "("}, exitUsage, ""},
		{"missing directory", []string{"test", "does/not/exist"}, exitUsage, ""},
		{"two directories", []string{"test", "a", "b"}, exitUsage, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := ptcMain(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) {
				t.Fatalf("exit %d (want %d), stdout %q (want %q), stderr %q", code, tc.code, stdout, tc.stdout, stderr)
			}
		})
	}
}

func TestTestCommandUpdate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	src := "# keep me\nsource: |\n  return { n: 1 + 1 };\nexpect:\n  result: {n: 3}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := ptcMain(t, "test", dir); code != exitTestFailed || !strings.Contains(stdout, "/n: 3 → 2") {
		t.Fatalf("before update: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ := ptcMain(t, "test", dir, "--update"); code != exitOK || !strings.Contains(stdout, "--- UPDATE: c (") {
		t.Fatalf("update: exit %d\n%s", code, stdout)
	}
	got, _ := os.ReadFile(file)
	if string(got) != "# keep me\nsource: |\n  return { n: 1 + 1 };\nexpect:\n  result:\n    n: 2\n" {
		t.Fatalf("updated file:\n%s", got)
	}
	if code, stdout, _ := ptcMain(t, "test", dir); code != exitOK {
		t.Fatalf("after update: exit %d\n%s", code, stdout)
	}
}
