package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestNodeJSON(t *testing.T) {
	cases := []struct {
		name, yaml, want, err string
	}{
		{"scalars", `[1, -2.5, 1e3, true, null, ~, "x", plain, 0x1F, 1_000, .5]`, `[1,-2.5,1e3,true,null,null,"x","plain",31,1000,0.5]`, ""},
		{"key order kept", "b: 1\na: 2\n", `{"b":1,"a":2}`, ""},
		{"timestamps stay strings", `d: 2026-01-01`, `{"d":"2026-01-01"}`, ""},
		{"quoted numbers stay strings", `n: "12"`, `{"n":"12"}`, ""},
		{"big integer exact", `9007199254740993`, `9007199254740993`, ""},
		{"aliases", "a: &x {k: 1}\nb: *x\n", `{"a":{"k":1},"b":{"k":1}}`, ""},
		{"block string", "s: |\n  a\n  b\n", `{"s":"a\nb\n"}`, ""},
		{"non-string key", "? [1]\n: 2\n", "", "mapping key must be a plain string"},
		{"infinity", `.inf`, "", "has no JSON form"},
		{"alias bomb", bomb(), "", "too large"},
		{"too deep", strings.Repeat("[", 1100) + strings.Repeat("]", 1100), "", "nested too deeply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.yaml), &n); err != nil {
				t.Fatal(err)
			}
			got, err := nodeJSON(&n)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// bomb is a "billion laughs" document: 10 levels of 10 aliases each.
func bomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func parseCase(t *testing.T, src string) error {
	t.Helper()
	c := &Case{Name: "c", File: "dir/c.yaml"}
	return c.parse([]byte(src))
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown top key", "source: x\nexpected: 1\n", `dir/c.yaml: line 2: unknown key "expected"`},
		{"unknown nested key", "source: x\nexpect:\n  reslt: 1\n", `line 3: unknown key "reslt"`},
		{"unknown fixture key", "source: x\nfixtures:\n  t:\n    - outptu: 1\n", `unknown key "outptu"`},
		{"duplicate key", "source: x\nsource: y\n", `already defined`},
		{"empty", "", "dir/c.yaml is empty"},
		{"not a mapping", "[1]", "dir/c.yaml: line 1: cannot unmarshal"},
		{"no script", "expect: {result: 1}\n", "no script: add script: FILE or source: |"},
		{"script and source", "script: a.js\nsource: x\n", "either script"},
		{"bad language", "source: x\nlanguage: cobol\n", `language "cobol"`},
		{"bad kind", "source: x\nexpect: {error: OOPS}\n", `expect.error "OOPS" is not an error kind`},
		{"error and result", "source: x\nexpect: {error: TIMEOUT, result: 1}\n", "excludes result"},
		{"message without error", "source: x\nexpect: {message: m}\n", "needs expect.error"},
		{"bad duration", "source: x\nlimits: {timeout: soon}\n", `limits.timeout: duration "soon" is invalid`},
		{"rule with two answers", "source: x\nfixtures:\n  t:\n    - output: 1\n      error: {code: c}\n", "fixtures.t[0]: give exactly one of output, error and sequence"},
		{"error without code", "source: x\nfixtures:\n  t:\n    - error: {message: m}\n", "fixtures.t[0].error.code is empty"},
		{"empty rules", "source: x\nfixtures:\n  t: []\n", "fixtures.t has no rules"},
		{"cassette with fixtures", "cassette: c.jsonl\nfixtures:\n  t:\n    - output: 1\n", "gets every tool from it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := parseCase(t, tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRunExamples(t *testing.T) {
	cases, err := Load("../../../examples/tests")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 5 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, o := range Run(context.Background(), cases, Config{}) {
		if !o.Passed {
			t.Errorf("%s: %s", o.Case.Name, o.Failure)
		}
	}
}

func TestRunFilterAndParallel(t *testing.T) {
	cases, err := Load("../../../examples/tests")
	if err != nil {
		t.Fatal(err)
	}
	out := Run(context.Background(), cases, Config{Parallel: 1, Filter: regexp.MustCompile(`^tool-`)})
	if len(out) != 2 || out[0].Case.Name != "tool-call-limit" || out[1].Case.Name != "tool-error-caught" {
		t.Fatalf("filtered %d cases", len(out))
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load("testdata/does-not-exist"); err == nil || !strings.Contains(err.Error(), "test directory") {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no test cases in") {
		t.Fatalf("Load: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxCaseFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := Load(big)
	if err != nil {
		t.Fatal(err)
	}
	if o := Run(context.Background(), cs, Config{}); o[0].Passed || !strings.Contains(o[0].Failure, "more than the 4194304 allowed") {
		t.Fatalf("outcome %+v", o[0])
	}
}

func TestUpdate(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/update/case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "upd", CaseFileName)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o := Run(context.Background(), cases, Config{}); o[0].Passed || !strings.Contains(o[0].Failure, "/n: 0 → 2") {
		t.Fatalf("before update: %+v", o[0])
	}
	if o := Run(context.Background(), cases, Config{Update: true}); !o[0].Passed || !o[0].Updated {
		t.Fatalf("update: %+v", o[0])
	}
	got, _ := os.ReadFile(file)
	for _, want := range []string{
		"# A comment that --update keeps.",
		"input: {n: 1} # inline comment",
		"  return { n: input.n + 1,",
		"  result:\n    n: 2\n    tags:\n      - a\n      - \"true\"\n      - \"2026-01-01\"\n    none: []\n    nested:\n      ok: true\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("updated file lacks %q:\n%s", want, got)
		}
	}
	cases, _ = Load(dir)
	if o := Run(context.Background(), cases, Config{}); !o[0].Passed {
		t.Fatalf("after update: %s", o[0].Failure)
	}
}

func TestUpdateResultFile(t *testing.T) {
	dir := t.TempDir()
	yml := "source: \"return [1, {a: 2}]\"\nexpect:\n  result_file: want.json\n"
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "want.json"), []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, _ := Load(dir)
	if o := Run(context.Background(), cases, Config{Update: true}); !o[0].Updated {
		t.Fatalf("update: %+v", o[0])
	}
	got, _ := os.ReadFile(filepath.Join(dir, "want.json"))
	if string(got) != "[\n  1,\n  {\n    \"a\": 2\n  }\n]\n" {
		t.Fatalf("want.json:\n%s", got)
	}
}

func TestWriteJUnit(t *testing.T) {
	outs := []Outcome{
		{Case: &Case{Name: "a"}, Passed: true, Duration: 12 * time.Millisecond},
		{Case: &Case{Name: "b"}, Failure: "first line\n  detail <&>", Duration: time.Second},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "examples/tests", outs, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	s := got.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || s.Time != "2.000" || s.Cases[1].Failure == nil ||
		s.Cases[1].Failure.Message != "first line" || s.Cases[1].Failure.Text != "first line\n  detail <&>" || s.Cases[0].Time != "0.012" {
		t.Fatalf("parsed %+v", s)
	}
}

func FuzzParseCase(f *testing.F) {
	for _, p := range []string{"testdata/update/case.yaml", "../../../examples/tests/static-fixtures.yaml", "../../../examples/tests/inline-definitions.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Case{Name: "f", File: "f.yaml"}
		if c.parse(data) != nil {
			return
		}
		// A case that parses converts its YAML values without panicking.
		s := &c.spec
		for _, n := range []*yaml.Node{&s.Input, &s.Expect.Result, &s.Expect.Schema} {
			if b, err := nodeJSON(n); err == nil && b != nil && !json.Valid(b) {
				t.Fatalf("invalid JSON %s", b)
			}
		}
		_, _ = c.tools()
	})
}
