package tsdecl

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/tools"
)

var update = flag.Bool("update", false, "rewrite the golden .d.ts files in testdata")

// fixture is the content of a testdata/*.json file.
type fixture struct {
	Tools       []tools.Definition `json:"tools"`
	InputSchema json.RawMessage    `json:"input_schema"`
	OmitDocs    bool               `json:"omit_docs"`
	Compact     bool               `json:"compact"`
}

func loadFixture(t testing.TB, path string) fixture {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func (f fixture) generate() (string, error) {
	return Generate(f.Tools, Options{InputSchema: f.InputSchema, OmitDocs: f.OmitDocs, Compact: f.Compact})
}

func fixtures(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata: %v", err)
	}
	return paths
}

func TestGolden(t *testing.T) {
	for _, path := range fixtures(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, path)
			got, err := f.generate()
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			golden := strings.TrimSuffix(path, ".json") + ".d.ts"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run go test -update after checking the change):\n%s", golden, got)
			}
		})
	}
}

// TestDeterministic checks that the order of the definitions does not
// change the output.
func TestDeterministic(t *testing.T) {
	for _, path := range fixtures(t) {
		f := loadFixture(t, path)
		want, err := f.generate()
		if err != nil {
			t.Fatal(err)
		}
		for i, j := 0, len(f.Tools)-1; i < j; i, j = i+1, j-1 {
			f.Tools[i], f.Tools[j] = f.Tools[j], f.Tools[i]
		}
		for range 3 {
			got, err := f.generate()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: output depends on the order of the definitions", path)
			}
		}
	}
}
