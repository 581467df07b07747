package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/mcpserve/mcptest"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/testenv"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

// ptcBinary is the ptc binary TestMain built.
func ptcBinary(t *testing.T) string {
	t.Helper()
	return ptcBin
}

// everythingBin is the reference MCP server installed by `npm ci` (see
// testenv.NodeBin: a skip without it, a failure in CI).
func everythingBin(t *testing.T) string {
	t.Helper()
	return testenv.NodeBin(t, "mcp-server-everything")
}

// stdioConfig is a ptcd.yaml for `ptc mcp --config`: the demo tools and
// server-everything, of which only echo and get-sum are offered.
func stdioConfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "ptcd.yaml")
	body := fmt.Sprintf("demo_tools: true\ntool_sources:\n  - name: everything\n    type: mcp_stdio\n    command: %s\n    args: [stdio]\n    allow: [echo, get-sum]\n", everythingBin(t))
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func expensesExample(t *testing.T) (string, string) {
	t.Helper()
	src, err := os.ReadFile("../../examples/expenses.js")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../examples/expenses.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, want); err != nil {
		t.Fatal(err)
	}
	return string(src), b.String()
}

// waitProgress reads progress notifications until every call of an
// execution has been reported started and finished, or until the summary
// sent when notifications had to be dropped. Notifications may arrive
// after the call's answer (the client handles them in order, on their own
// goroutine); the timeout only guards a test that would otherwise hang.
func waitProgress(t *testing.T, progress <-chan string, calls int) {
	t.Helper()
	summary := fmt.Sprintf("%d tool calls started, %d finished", calls, calls)
	for n := 0; n < 2*calls; n++ {
		select {
		case m := <-progress:
			if m == summary {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d progress notifications for %d tool calls", n, calls)
		}
	}
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// TestMCPStdio drives `ptc mcp --config` as an MCP client would: the
// official Go SDK client starts the built command and talks to it over
// stdio.
func TestMCPStdio(t *testing.T) {
	bin := ptcBinary(t)
	cmd := exec.Command(bin, "mcp", "--config", stdioConfig(t))
	cmd.Stderr = os.Stderr
	progress := make(chan string, 256)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "go-acceptance", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		}}).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 2 || list.Tools[0].Name != "execute" || list.Tools[1].Name != "search" {
		t.Fatalf("tools: %v %+v", err, list)
	}
	if d := list.Tools[0].Description; !strings.Contains(d, "The 5 tools") || !strings.Contains(d, `"get-sum"(args: EverythingGetSumInput)`) {
		t.Fatalf("execute's description:\n%s", d)
	}

	src, want := expensesExample(t)
	params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": src}}
	params.SetProgressToken(1)
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || resultText(res) != want {
		t.Fatalf("expenses: %v %s", err, resultText(res))
	}
	waitProgress(t, progress, 26)

	cases := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"search", "search", map[string]any{"query": "add two numbers"}, false, "everything.get-sum"},
		{"mcp source", "execute", map[string]any{"code": `return await tools.everything["get-sum"]({a: 40, b: 2})`}, false, "42"},
		{"script error", "execute", map[string]any{"code": `throw new Error("boom")`}, true, "SCRIPT_ERROR"},
		{"denied tool", "execute", map[string]any{"code": `return await tools.everything["get-env"]({})`}, true, "unknown tool"},
		{"missing code", "execute", map[string]any{}, true, `"code" is missing`},
		{"code not a string", "execute", map[string]any{"code": []int{1}}, true, `"code" must be a string`},
		{"oversized code", "execute", map[string]any{"code": strings.Repeat("x", executor.DefaultMaxSourceBytes+1)}, true, "more than the 1048576 allowed"},
		{"unknown language", "execute", map[string]any{"code": "1", "language": "go"}, true, `language "go" is not supported`},
		{"still serving", "execute", map[string]any{"code": "return 'ok'"}, false, `"ok"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil || res.IsError != tc.isError || !strings.Contains(resultText(res), tc.want) {
				t.Fatalf("%v isError %v: %s", err, res != nil && res.IsError, resultText(res))
			}
		})
	}
}

// runMCP runs `ptc mcp args...` in this process on pipes and returns a
// Go SDK client session on them.
func runMCP(t *testing.T, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	var stderr bytes.Buffer
	// The command's goroutine ends when the client closes its stdin.
	go func() {
		code <- run(ctx, append([]string{"mcp"}, args...), inR, outW, &stderr)
		_ = outW.Close()
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, opts).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("%v: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inW.Close()
		if c := <-code; c != 0 {
			t.Errorf("ptc mcp exited %d: %s", c, stderr.String())
		}
		cancel()
	})
	return cs
}

// TestMCPFrontsServer: `ptc mcp --server` serves a running ptcd's tools
// for the tenant of $PTC_TOKEN, through the Go client.
func TestMCPFrontsServer(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Registry: reg, Approve: func(name string) bool { return name == "get_budget_by_level" }})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	authn, err := auth.New(true, []auth.Tenant{{Name: "t", TokenHashes: []string{auth.HashToken("front-token-0123456789")}, Tools: []string{"get_team_members", "get_budget_by_level"}}})
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(server.Interceptors(server.ChainConfig{Log: discardLog(), Auth: authn.Authenticate})...)
	ptcv1.RegisterRunnerServiceServer(gs, server.New(ex))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The serve goroutine ends at Stop.
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	t.Setenv(tokenEnv, "front-token-0123456789")
	progress := make(chan string, 16)
	asked := make(chan string, 4)
	cs := runMCP(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		progress <- r.Params.Message
	}, ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked <- r.Params.Message
		if strings.Contains(r.Params.Message, "junior") {
			return &sdk.ElicitResult{Action: "decline"}, nil
		}
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}, "--server", lis.Addr().String())
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || !strings.Contains(list.Tools[0].Description, "The 2 tools") {
		t.Fatalf("%v %+v", err, list)
	}
	// The description tells the model in advance which tool the server's
	// rule gates: the note follows get_budget_by_level's declaration
	// comment, and only that one.
	if d := list.Tools[0].Description; strings.Count(d, "Each call waits for approval") != 1 || strings.Index(d, "Each call waits for approval") > strings.Index(d, "get_budget_by_level(") {
		t.Fatalf("execute's description does not mark the gated tool:\n%s", d)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{
		"code": `return (await tools.get_team_members({department: "support"})).length`}})
	if err != nil || res.IsError || resultText(res) == "" || res.Meta["ptc/executionId"] == nil {
		t.Fatalf("%v %s", err, resultText(res))
	}
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "members of a department"}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "get_team_members") {
		t.Fatalf("%v %s", err, resultText(res))
	}
	// Progress comes through ptcd's Session stream.
	params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{
		"code": `await tools.get_team_members({department: "sales"}); return 2`}}
	params.SetProgressToken("remote")
	if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
		t.Fatalf("%v %s", err, resultText(res))
	}
	waitProgress(t, progress, 1)
	// Approvals ptcd requires are asked over the Session, and put to the
	// MCP client's user through elicitation.
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{
		"code": `const s = await tools.get_budget_by_level({level: "senior"});
			try { await tools.get_budget_by_level({level: "junior"}); } catch (e) { return [s.travel_limit, e.code, e.message]; }`}})
	if err != nil || res.IsError || resultText(res) != `[3000,"denied","the user declined the call"]` {
		t.Fatalf("%v %s", err, resultText(res))
	}
	for _, level := range []string{"senior", "junior"} {
		if q := <-asked; !strings.Contains(q, `get_budget_by_level with {"level":"`+level+`"}`) || !strings.Contains(q, "the server's configuration requires approval") {
			t.Fatalf("asked %q", q)
		}
	}

	t.Setenv(tokenEnv, "not-the-token")
	cs = runMCP(t, nil, "--server", lis.Addr().String())
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "bearer token is not valid") {
		t.Fatalf("%v %s", err, resultText(res))
	}
}

// TestMCPUsage: conflicting or unknown flags are usage errors.
func TestMCPUsage(t *testing.T) {
	for _, args := range [][]string{{"--server", "x:1", "--config", "y.yaml"}, {"extra"}, {"--nope"}, {"--config", "/does/not/exist.yaml"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"mcp"}, args...), strings.NewReader(""), io.Discard, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d (%s)", args, code, stderr.String())
		}
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestMCPStdioTypeScriptClient drives `ptc mcp --config` with the official
// TypeScript SDK client over stdio.
func TestMCPStdioTypeScriptClient(t *testing.T) {
	src, want := expensesExample(t)
	deny := `return await tools.everything["get-env"]({})`
	r := mcptest.RunTSClient(t, mcptest.Plan{Transport: "stdio", Command: ptcBinary(t), Args: []string{"mcp", "--config", stdioConfig(t)},
		Steps: mcptest.AcceptanceSteps(src, deny)})
	mcptest.CheckAcceptance(t, r, want, "everything.get-env")
}

// TestMCPConfigApprovals: `ptc mcp --config` applies the file's approvals
// section; a client without elicitation has those calls denied, saying
// why, and the tool never runs.
func TestMCPConfigApprovals(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ptcd.yaml")
	if err := os.WriteFile(cfg, []byte("demo_tools: true\napprovals:\n  tools: [\"get_budget_*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := runMCP(t, nil, "--config", cfg, "--inprocess")
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{
		"code": `const m = await tools.get_team_members({department: "support"});
			try { await tools.get_budget_by_level({level: "senior"}); return "ran"; } catch (e) { return [m.length > 0, e.code, e.message]; }`}})
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), `[true,"denied","tool get_budget_by_level needs approval and this MCP client cannot ask for it (it does not support elicitation)`) {
		t.Fatalf("%v %s", err, resultText(res))
	}
}
