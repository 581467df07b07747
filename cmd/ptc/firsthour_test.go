package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc/internal/testenv"
)

// TestMCPConfigFromAnotherDirectory: `ptc mcp --config examples/mcp.yaml`
// started from another directory, as a desktop MCP client starts it, fails
// saying that the relative command was looked for from the working
// directory, and how to set it, instead of advising to fix the server.
func TestMCPConfigFromAnotherDirectory(t *testing.T) {
	cfg, err := filepath.Abs("../../examples/mcp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(ptcBin, "mcp", "--config", cfg)
	cmd.Dir = dir
	code, _, stderr := testenv.Run(t, cmd)
	for _, want := range []string{
		"fork/exec node_modules/.bin/mcp-server-everything",
		"a relative command is looked for from the working directory, " + dir + ", not from the configuration file's directory",
		"(cwd)", "an absolute command or a dir",
	} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, want)
		}
	}
	if strings.Contains(stderr, "fix the server") {
		t.Fatalf("stderr %q still blames the server", stderr)
	}
}
