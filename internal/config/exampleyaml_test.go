package config

import (
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestExampleConfig: examples/ptcd.yaml is valid, sets every top-level
// section it describes as settable, and its workers section states the
// defaults (the file says so).
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile("../../examples/ptcd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"listen", "limits", "tool_sources", "mcp", "workers"} {
		if _, ok := top[key]; !ok {
			t.Errorf("examples/ptcd.yaml does not set %s", key)
		}
	}
	if c.Workers != Default().Workers {
		t.Errorf("workers %+v, the defaults are %+v", c.Workers, Default().Workers)
	}
	if strings.Contains(strings.ToLower(string(data)), "reserved") {
		t.Error("examples/ptcd.yaml still calls a section reserved")
	}
}
