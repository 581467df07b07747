package tsdecl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

// FuzzGenerate feeds arbitrary bytes as input and output schemas: Generate
// must never panic, must return either text or a classified error, and must
// stay within its size limit.
func FuzzGenerate(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var fx fixture
		if err := json.Unmarshal(raw, &fx); err != nil {
			f.Fatal(err)
		}
		for _, d := range fx.Tools {
			f.Add(string(d.Name), []byte(d.InputSchema), []byte(d.OutputSchema))
		}
	}
	f.Add("a", []byte(`{"$ref":"#"}`), []byte(`{"anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"$ref":"#"}}}`))
	f.Add("a.b", []byte(`{"prefixItems":[{"$ref":"#/prefixItems/0"}]}`), []byte(`{"enum":[{"a":[{}]}]}`))
	const maxBytes = 64 << 10
	f.Fuzz(func(t *testing.T, name string, in, out []byte) {
		d := tools.Definition{Name: name, Description: name, InputSchema: in, OutputSchema: out}
		text, err := Generate([]tools.Definition{d, {Name: "other", InputSchema: in}}, Options{MaxBytes: maxBytes, InputSchema: out})
		if err != nil {
			if !errors.Is(err, ErrInvalidTool) && !errors.Is(err, ErrInvalidSchema) &&
				!errors.Is(err, ErrTooDeep) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if len(text) > maxBytes {
			t.Fatalf("output is %d bytes, over the %d limit", len(text), maxBytes)
		}
		if !strings.Contains(text, "declare const tools: ") {
			t.Fatalf("output lacks the tools declaration:\n%s", text)
		}
		// Comments end only where the generator ends them: at a line end.
		for i := strings.Index(text, "*/"); i >= 0; {
			if i+2 >= len(text) || text[i+2] != '\n' {
				t.Fatalf("comment terminator inside a line at byte %d:\n%s", i, text)
			}
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				break
			}
			i += 2 + j
		}
		if strings.ContainsAny(text, "\u2028\u2029\r") {
			t.Fatalf("output contains a line separator that breaks comments:\n%q", text)
		}
	})
}
