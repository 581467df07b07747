package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/internal/testenv"
)

// everything returns the path of the reference MCP server installed by
// `npm ci` (see testenv.NodeBin: a skip without it, a failure in CI).
func everything(t *testing.T) string {
	t.Helper()
	return testenv.NodeBin(t, "mcp-server-everything")
}

// TestScriptChainsMCPTools starts ptcd with an MCP stdio source from a
// config file and runs a script that chains several of its tools.
func TestScriptChainsMCPTools(t *testing.T) {
	bin := everything(t)
	cfg := filepath.Join(t.TempDir(), "ptcd.yaml")
	err := os.WriteFile(cfg, []byte(`
tool_sources:
  - name: everything
    type: mcp_stdio
    command: `+bin+`
    args: [stdio]
    required: true
    allow: [echo, get-sum]
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	addr, _, _ := startPtcd(t, "--config", cfg)
	c, err := ptc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defs, err := c.Tools(context.Background())
	if err != nil || len(defs) != 2 {
		t.Fatalf("tools %v %v", defs, err)
	}
	res, err := c.Execute(context.Background(), ptc.Request{Source: `
const sum = await tools.everything["get-sum"]({a: 20, b: 22});
const echoed = await tools.everything.echo({message: "sum=" + JSON.stringify(sum)});
let denied;
try { await tools.everything["get-env"]({}) } catch (e) { denied = e.code }
return {sum, echoed, denied};`})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	out := string(res.Result)
	if !strings.Contains(out, "42") || !strings.Contains(out, "sum=") || !strings.Contains(out, `"denied":"unknown_tool"`) {
		t.Fatalf("result %s", out)
	}
	// The call to a tool the allow list filtered out is refused, and
	// recorded like every call the script made.
	if len(res.Trace) != 3 || res.Trace[0].Tool != "everything.get-sum" || res.Trace[2].ErrorCode != "unknown_tool" {
		t.Fatalf("trace %+v", res.Trace)
	}
}
