package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/prompt"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
	"github.com/ptcrun/ptc/tools/mcp"
)

// TestDefinitionBytes measures what a model is shown of the tools: the
// bytes of the tool definitions a client lists (tools/list, as JSON)
// connected directly to the upstream servers, and through ptc (its two
// tools), for the demo tools, the reference server-everything, both, and
// several copies of server-everything. docs/mcp.md quotes the table:
//
//	go test -run TestDefinitionBytes -v ./internal/mcpserve/
func TestDefinitionBytes(t *testing.T) {
	bin := testenv.NodeBin(t, "mcp-server-everything")

	// Directly: what server-everything lists, as a client receives it.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "measure", Version: "1"}, nil).Connect(context.Background(),
		&sdk.CommandTransport{Command: exec.Command(bin, "stdio")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := cs.ListTools(context.Background(), nil)
	_ = cs.Close()
	if err != nil {
		t.Fatal(err)
	}
	everythingDirect := toolsBytes(t, listed.Tools)

	// The demo tools as an MCP server offering one tool each would list
	// them: name, description and schemas.
	var demoDirect []*sdk.Tool
	for _, d := range demo.Tools() {
		demoDirect = append(demoDirect, &sdk.Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema})
	}

	// Through ptc: server-everything as a tool source.
	src, err := mcp.Start(context.Background(), mcp.Config{Name: "everything", Command: bin, Args: []string{"stdio"}, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	everything := src.Tools()
	copies := func(k int) []tools.Tool {
		var out []tools.Tool
		for i := 1; i <= k; i++ {
			for _, tl := range everything {
				tl.Name = fmt.Sprintf("everything%d.%s", i, strings.TrimPrefix(tl.Name, "everything."))
				out = append(out, tl)
			}
		}
		return out
	}

	rows := []struct {
		name    string
		direct  int
		tools   []tools.Tool
		useDemo bool
	}{
		{"demo tools", toolsBytes(t, demoDirect), nil, true},
		{"server-everything", everythingDirect, everything, false},
		{"demo tools + server-everything", toolsBytes(t, demoDirect) + everythingDirect, everything, true},
		{"server-everything × 4", 4 * everythingDirect, copies(4), false},
		{"server-everything × 16", 16 * everythingDirect, copies(16), false},
	}
	t.Logf("| upstream | tools | directly (bytes) | through ptc (bytes) | through ptc / directly | execute's description (bytes) | declarations in it |")
	t.Logf("|---|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		reg := tools.NewRegistry()
		if r.useDemo {
			if err := reg.Register(demo.Tools()...); err != nil {
				t.Fatal(err)
			}
		}
		for _, tl := range r.tools {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		ex, err := executor.New(executor.Config{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		c := connect(t, mcpserve.New(mcpserve.Config{Backend: server.New(ex)}), nil)
		l, err := c.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		through := toolsBytes(t, l.Tools)
		inline := strings.Contains(l.Tools[0].Description, "declare const tools")
		decl := "all"
		if !inline {
			decl = "none: names, then search"
		}
		t.Logf("| %s | %d | %d | %d | %.2f | %d | %s |", r.name, len(reg.Names()), r.direct, through, float64(through)/float64(r.direct), len(l.Tools[0].Description), decl)
		if !inline {
			for _, q := range []string{"sum of two numbers", "environment variables", "long running operation with progress"} {
				res := call(t, c, "search", fmt.Sprintf(`{"query":%q}`, q))
				t.Logf("  search %q: %d bytes of text, %d tools", q, len(text(res)), strings.Count(text(res), "): Promise<"))
			}
		}
		if !inline && through > mcpserve.DefaultDescriptionBytes {
			t.Errorf("%s: %d bytes through ptc once the tools are only named", r.name, through)
		}
		_ = ex.Close()
	}
	t.Logf("ptc's instructions at initialization: %d bytes; the script contract (prompt) alone: %d bytes",
		len(connect(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}), nil).InitializeResult().Instructions),
		len(prompt.Prompt(prompt.Options{})))
}

// toolsBytes is the length of the tools' JSON as tools/list carries it
// (the SDK does not escape <, > and & on the wire).
func toolsBytes(t *testing.T, ts []*sdk.Tool) int {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ts); err != nil {
		t.Fatal(err)
	}
	return b.Len() - 1 // Encode's newline
}
