// Package suite loads and runs ptc test cases: a script, its input, tool
// fixtures (static answers, ordered answers, injected errors, or a
// cassette to replay) and an expectation (exact JSON, a JSON Schema, an
// error kind). It is the engine behind `ptc test`; the format is
// documented in docs/testing.md.
//
// A case is either a directory holding case.yaml (and usually the script
// beside it) or a single .yaml file with the script inline. Case files are
// decoded strictly: an unknown key is an error naming the key and the file.
package suite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ptcrun/ptc/internal/limits"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CaseFileName is the file that makes a directory a case.
const CaseFileName = "case.yaml"

// MaxCaseFileBytes bounds one case file.
const MaxCaseFileBytes = 4 << 20

// Case is one loaded test case.
type Case struct {
	// Name is the case's path below the suite root, with '/' separators
	// and without the .yaml extension ("static-fixtures", "errors/timeout").
	Name string
	// File is the case file's path.
	File string

	spec caseFile
	doc  yaml.Node
	// err is a load error: the case fails with it.
	err error
}

// caseFile is the YAML schema of a case.
type caseFile struct {
	Description string           `yaml:"description"`
	Script      string           `yaml:"script"`
	Source      string           `yaml:"source"`
	Language    string           `yaml:"language"`
	Input       yaml.Node        `yaml:"input"`
	Seed        uint64           `yaml:"seed"`
	Limits      limits.Limits    `yaml:"limits"`
	DemoTools   *bool            `yaml:"demo_tools"`
	Definitions []definition     `yaml:"definitions"`
	Fixtures    map[string]rules `yaml:"fixtures"`
	Cassette    string           `yaml:"cassette"`
	Expect      expectation      `yaml:"expect"`
	// RequireApproval, ClientTools and Resumes make the case resumable:
	// the execution pauses at approvals and client tool calls, and each
	// pause is answered by the next step of Resumes.
	RequireApproval []string     `yaml:"require_approval"`
	ClientTools     []definition `yaml:"client_tools"`
	Resumes         []resumeStep `yaml:"resumes"`
}

// resumeStep answers one pause of a resumable case.
type resumeStep struct {
	// Pending, when set, are the tools the pause must wait for, in seq
	// order.
	Pending []string `yaml:"pending"`
	// Approve lists the tools whose pending approvals are approved ("all"
	// approves every one); Deny maps tools to the reason of a denial.
	Approve []string          `yaml:"approve"`
	Deny    map[string]string `yaml:"deny"`
	// Answer maps client tools to their output; Fail to their error.
	Answer map[string]yaml.Node  `yaml:"answer"`
	Fail   map[string]*toolError `yaml:"fail"`
}

// resumable reports whether the case runs resumably.
func (s *caseFile) resumable() bool {
	return len(s.RequireApproval) > 0 || len(s.ClientTools) > 0 || len(s.Resumes) > 0
}

type definition struct {
	Name         string    `yaml:"name"`
	Description  string    `yaml:"description"`
	InputSchema  yaml.Node `yaml:"input_schema"`
	OutputSchema yaml.Node `yaml:"output_schema"`
}

type rules []rule

type rule struct {
	Match    yaml.Node  `yaml:"match"`
	Output   yaml.Node  `yaml:"output"`
	Error    *toolError `yaml:"error"`
	Sequence []answer   `yaml:"sequence"`
}

type answer struct {
	Output yaml.Node  `yaml:"output"`
	Error  *toolError `yaml:"error"`
}

type toolError struct {
	Code    string `yaml:"code"`
	Message string `yaml:"message"`
}

type expectation struct {
	Result     yaml.Node `yaml:"result"`
	ResultFile string    `yaml:"result_file"`
	Schema     yaml.Node `yaml:"schema"`
	Error      string    `yaml:"error"`
	Message    string    `yaml:"message"`
	Calls      []string  `yaml:"calls"`
}

// Load finds the cases below root, sorted by name. A case that cannot be
// parsed is still returned: running it reports the parse error. Load fails
// only when root cannot be read or holds no case.
func Load(root string) ([]*Case, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("test directory: %w", err)
	}
	if !info.IsDir() {
		return []*Case{loadCase(filepath.Dir(root), root)}, nil
	}
	var cases []*Case
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			cf := filepath.Join(path, CaseFileName)
			if _, err := os.Stat(cf); err == nil && path != root {
				cases = append(cases, loadCase(root, cf))
				return filepath.SkipDir
			}
			return nil
		}
		if isYAML(d.Name()) && d.Name() != CaseFileName {
			cases = append(cases, loadCase(root, path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("test directory: %w", err)
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no test cases in %s: add DIR/NAME/%s or DIR/NAME.yaml", root, CaseFileName)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].Name < cases[j].Name })
	return cases, nil
}

func isYAML(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".yaml" || ext == ".yml"
}

// caseName names a case file relative to the suite root.
func caseName(root, file string) string {
	p := file
	if filepath.Base(file) == CaseFileName {
		p = filepath.Dir(file)
	} else {
		p = strings.TrimSuffix(p, filepath.Ext(p))
	}
	if rel, err := filepath.Rel(root, p); err == nil && rel != "." {
		p = rel
	}
	return filepath.ToSlash(p)
}

func loadCase(root, file string) *Case {
	c := &Case{Name: caseName(root, file), File: file}
	data, err := readBounded(file)
	if err != nil {
		c.err = err
		return c
	}
	c.err = c.parse(data)
	return c
}

func readBounded(file string) ([]byte, error) {
	info, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if info.Size() > MaxCaseFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed for a case file", file, info.Size(), MaxCaseFileBytes)
	}
	return os.ReadFile(file)
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)

// parse decodes a case file strictly and checks what can be checked
// without running it.
func (c *Case) parse(data []byte) error {
	if len(data) > MaxCaseFileBytes {
		return fmt.Errorf("%s is %d bytes, more than the %d allowed for a case file", c.File, len(data), MaxCaseFileBytes)
	}
	if err := yaml.Unmarshal(data, &c.doc); err != nil {
		return fmt.Errorf("%s: %s", c.File, cleanYAMLError(err))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c.spec); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s is empty: give at least a script and an expectation", c.File)
		}
		return fmt.Errorf("%s: %s", c.File, cleanYAMLError(err))
	}
	return c.check()
}

func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.ReplaceAll(s, "unmarshal errors:\n  ", "")
	s = unknownField.ReplaceAllString(s, `unknown key "$1"`)
	return strings.ReplaceAll(s, "\n  ", "; ")
}

func (c *Case) check() error {
	s := &c.spec
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", c.File, fmt.Sprintf(format, args...))
	}
	if s.Script != "" && s.Source != "" {
		return bad("give either script (a file) or source (inline), not both")
	}
	if s.Script == "" && s.Source == "" && s.Cassette == "" {
		return bad("no script: add script: FILE or source: |")
	}
	if s.Cassette != "" && (len(s.Fixtures) > 0 || len(s.Definitions) > 0 || s.DemoTools != nil) {
		return bad("a case with a cassette gets every tool from it: drop fixtures, definitions and demo_tools")
	}
	if s.Cassette != "" && s.resumable() {
		return bad("a case with a cassette cannot pause: drop require_approval, client_tools and resumes")
	}
	for i, st := range s.Resumes {
		for tool, e := range st.Fail {
			if e == nil || e.Code == "" {
				return bad("resumes[%d].fail.%s needs a code", i, tool)
			}
		}
	}
	if s.Language != "" && s.Language != "javascript" && s.Language != "typescript" && s.Language != "python" {
		return bad("language %q: use javascript, typescript or python", s.Language)
	}
	e := &s.Expect
	if e.Result.Kind != 0 && e.ResultFile != "" {
		return bad("expect: give either result or result_file, not both")
	}
	if e.Error != "" {
		if _, ok := parseKind(e.Error); !ok {
			return bad("expect.error %q is not an error kind: use one of %s", e.Error, kindList())
		}
		if e.Result.Kind != 0 || e.ResultFile != "" || e.Schema.Kind != 0 {
			return bad("expect: an expected error excludes result, result_file and schema")
		}
	} else if e.Message != "" {
		return bad("expect.message is a substring of the error message: it needs expect.error")
	}
	if err := s.Limits.Check(); err != nil {
		return bad("%v", err)
	}
	for tool, rs := range s.Fixtures {
		if len(rs) == 0 {
			return bad("fixtures.%s has no rules", tool)
		}
		for i, r := range rs {
			n := 0
			if r.Output.Kind != 0 {
				n++
			}
			if r.Error != nil {
				n++
			}
			if r.Sequence != nil {
				n++
			}
			if n != 1 {
				return bad("fixtures.%s[%d]: give exactly one of output, error and sequence", tool, i)
			}
			if r.Error != nil && r.Error.Code == "" {
				return bad("fixtures.%s[%d].error.code is empty", tool, i)
			}
			for j, a := range r.Sequence {
				if (a.Output.Kind != 0) == (a.Error != nil) {
					return bad("fixtures.%s[%d].sequence[%d]: give exactly one of output and error", tool, i, j)
				}
				if a.Error != nil && a.Error.Code == "" {
					return bad("fixtures.%s[%d].sequence[%d].error.code is empty", tool, i, j)
				}
			}
		}
	}
	return nil
}

// path resolves a path given in the case file, relative to it.
func (c *Case) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(c.File), filepath.FromSlash(p))
}

// jsonOf converts a YAML field to JSON, naming the field in errors.
func (c *Case) jsonOf(field string, n *yaml.Node) (json.RawMessage, error) {
	b, err := nodeJSON(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", c.File, field, err)
	}
	return b, nil
}
