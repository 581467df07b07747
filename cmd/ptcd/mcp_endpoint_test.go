package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/mcpserve/mcptest"
	"github.com/ptcrun/ptc/internal/testenv"
)

const (
	mcpTokenAll    = "mcp-token-of-the-all-tenant-0123"
	mcpTokenNarrow = "mcp-token-of-the-narrow-tenant-01"
)

// mcpAddr returns the MCP endpoint's URL from ptcd's logs (logged before
// ready is signalled).
func mcpURL(t *testing.T, logs *testenv.SyncBuffer) string {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Addr, Path string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "mcp listening" {
			return "http://" + rec.Addr + rec.Path
		}
	}
	t.Fatalf("no mcp address in the logs: %s", logs.String())
	return ""
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP session on url with a token.
func mcpConnect(t *testing.T, url, token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	t.Helper()
	return mcpConnectTransport(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, opts)
}

func mcpConnectTransport(t *testing.T, tr *sdk.StreamableClientTransport, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "ptcd-test", Version: "1"}, opts).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mcpText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// weatherAPI is an HTTP endpoint served as an http tool source.
func weatherAPI(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"city":%q,"temp_c":21}`, strings.TrimPrefix(r.URL.Path, "/forecast/"))
	}))
	t.Cleanup(s.Close)
	return s
}

// mcpConfig writes a ptcd.yaml with the MCP endpoint on, every kind of
// tool source (the demo tools in Go, server-everything over MCP stdio, an
// HTTP endpoint) and two tenants: "all" and "narrow" (the demo tools but
// get_expenses, and no weather).
func mcpConfig(t *testing.T, weatherURL string) string {
	return writeFile(t, "ptcd.yaml", fmt.Sprintf(`
demo_tools: true
auth: {enabled: true}
mcp: {listen: "127.0.0.1:0"}
tool_sources:
  - name: everything
    type: mcp_stdio
    command: %s
    args: [stdio]
    allow: [echo, get-sum]
  - name: weather
    type: http
    tools:
      - name: forecast
        description: Forecast for a city.
        url: %s/forecast/{city}
        input_schema: {type: object, properties: {city: {type: string}}, required: [city]}
tenants:
  - name: all
    token_hashes: [%q]
  - name: narrow
    token_hashes: [%q]
    tools: [get_team_members, get_budget_by_level, "everything.*"]
    ceilings: {max_tool_calls: 5}
`, everything(t), weatherURL, auth.HashToken(mcpTokenAll), auth.HashToken(mcpTokenNarrow)))
}

// TestMCPEndpoint: ptcd's MCP endpoint with the official Go SDK client:
// authentication, the tools list, search, the expense example, every tool
// kind from one program, a script error, a denied tool, tenant limits,
// progress, bad arguments.
func TestMCPEndpoint(t *testing.T) {
	_, stop, logs := startPtcd(t, "--config", mcpConfig(t, weatherAPI(t).URL))
	url := mcpURL(t, logs)

	for _, token := range []string{"", "wrong-token"} {
		if _, err := mcpConnect(t, url, token, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("token %q: %v", token, err)
		}
	}

	progress := make(chan string, 256)
	all, err := mcpConnect(t, url, mcpTokenAll, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		progress <- r.Params.Message
	}})
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := mcpConnect(t, url, mcpTokenNarrow, nil)
	if err != nil {
		t.Fatal(err)
	}

	list, err := all.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 2 {
		t.Fatal(err, list)
	}
	desc := list.Tools[0].Description
	for _, w := range []string{"The 6 tools", "get_expenses(args: GetExpensesInput)", "everything: {", `"get-sum"(args: EverythingGetSumInput)`, "forecast(args: WeatherForecastInput)"} {
		if !strings.Contains(desc, w) {
			t.Errorf("execute's description lacks %q:\n%s", w, desc)
		}
	}
	nlist, err := narrow.ListTools(context.Background(), nil)
	if err != nil || !strings.Contains(nlist.Tools[0].Description, "The 4 tools") || strings.Contains(nlist.Tools[0].Description, "get_expenses") {
		t.Fatalf("narrow tenant's tools: %v\n%s", err, nlist.Tools[0].Description)
	}

	if res := mcpCall(t, all, "search", map[string]any{"query": "sum two numbers"}); res.IsError || !strings.Contains(mcpText(res), "everything.get-sum") {
		t.Fatalf("search: %s", mcpText(res))
	}

	src, _ := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.js"))
	want, _ := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.expected.json"))
	var wantC bytes.Buffer
	_ = json.Compact(&wantC, want)
	params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": string(src)}}
	params.SetProgressToken("expenses")
	res, err := all.CallTool(context.Background(), params)
	if err != nil || res.IsError || mcpText(res) != wantC.String() {
		t.Fatalf("expenses: %v %s", err, mcpText(res))
	}
	// Every call is reported started and finished (or, had notifications
	// been dropped, summarised); the client may handle them after the
	// answer, in order.
	summary := "26 tool calls started, 26 finished"
	for n := 0; n < 52; n++ {
		select {
		case m := <-progress:
			if m == summary {
				n = 52
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%d progress notifications for 26 calls", n)
		}
	}

	cases := []struct {
		name    string
		cs      *sdk.ClientSession
		args    map[string]any
		isError bool
		want    string
	}{
		{"every tool kind", all, map[string]any{"code": `
const team = await tools.get_team_members({department: "sales"});
const sum = await tools.everything["get-sum"]({a: team.length, b: 1});
const weather = await tools.weather.forecast({city: "Oslo"});
return {members: team.length, sum, city: weather.city}`}, false, `{"members":`},
		{"script error", all, map[string]any{"code": "const x = null;\nreturn x.y"}, true, "SCRIPT_ERROR at line 2"},
		{"denied tool", narrow, map[string]any{"code": `return await tools.get_expenses({member_id: "eng-01", quarter: "Q3"})`}, true, "unknown tool"},
		{"tenant ceiling", narrow, map[string]any{"code": `for (let i = 0; i < 6; i++) await tools.get_budget_by_level({level: "mid"})`}, true, "TOOL_CALL_LIMIT"},
		{"bad arguments", all, map[string]any{"code": 7}, true, `"code" must be a string`},
		{"oversized code", all, map[string]any{"code": "return 1;" + strings.Repeat(" ", 1<<20)}, true, "more than the 1048576 allowed"},
		{"unknown language", all, map[string]any{"code": "1", "language": "ruby"}, true, `language "ruby" is not supported`},
		{"still serving", all, map[string]any{"code": "return 'ok'"}, false, `"ok"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mcpCall(t, tc.cs, "execute", tc.args)
			if res.IsError != tc.isError || !strings.Contains(mcpText(res), tc.want) {
				t.Fatalf("isError %v: %s", res.IsError, mcpText(res))
			}
		})
	}
	if !strings.Contains(logs.String(), `"msg":"mcp call"`) || !strings.Contains(logs.String(), `"caller":"narrow"`) {
		t.Error("no call records in the logs")
	}
	// Milliseconds, as numbers, as gRPC's grpc.time_ms.
	if !regexp.MustCompile(`"msg":"mcp call".*"mcp.time_ms":[0-9.e-]+[,}]`).MatchString(logs.String()) {
		t.Errorf("no mcp call record with mcp.time_ms a number of milliseconds: %s", logs.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
}

// TestMCPShutdown: a shutdown lets a running MCP execution finish within
// the grace period, refuses new ones, closes idle sessions and exits 0.
func TestMCPShutdown(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		fmt.Fprint(w, `"slow answer"`)
	}))
	defer slow.Close()
	cfg := writeFile(t, "ptcd.yaml", fmt.Sprintf(`
mcp: {listen: "127.0.0.1:0"}
shutdown_grace: 1m
tool_sources:
  - name: slow
    type: http
    tools:
      - {name: call, url: %q}
`, slow.URL))
	_, stop, logs := startPtcd(t, "--config", cfg)
	url := mcpURL(t, logs)
	// The busy session has no standalone event stream: the Go SDK client
	// fails a session's calls when that stream ends, and the shutdown
	// ends it right after the answer is written (a race in the client
	// this test is not about).
	busy, err := mcpConnectTransport(t, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := mcpConnect(t, url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	// The caller goroutine ends when the slow tool is released.
	go func() {
		res, err := busy.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return await tools.slow.call()"}})
		if err != nil {
			answer <- err.Error()
			return
		}
		answer <- mcpText(res)
	}()
	<-entered
	exited := make(chan int, 1)
	go func() { exited <- stop() }()
	// New executions are refused once the drain has started: retry until
	// the drain is visible (no sleeping: each try is a round trip).
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := idle.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "return 1"}})
		if err != nil || (res.IsError && strings.Contains(mcpText(res), "shutting down")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("executions are still accepted during the shutdown")
		}
	}
	close(release)
	if got := <-answer; got != `"slow answer"` {
		t.Fatalf("the running execution: %s", got)
	}
	if code := <-exited; code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestMCPEndpointTypeScriptClient drives ptcd's MCP endpoint with the
// official TypeScript SDK client over streamable HTTP: the acceptance
// steps as the "all" tenant (the denied tool is one the source's allow
// list leaves out), a tool outside the "narrow" tenant's set, and
// authentication refused.
func TestMCPEndpointTypeScriptClient(t *testing.T) {
	_, _, logs := startPtcd(t, "--config", mcpConfig(t, weatherAPI(t).URL))
	url := mcpURL(t, logs)
	src, _ := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.js"))
	want, _ := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.expected.json"))
	var wantC bytes.Buffer
	_ = json.Compact(&wantC, want)

	r := mcptest.RunTSClient(t, mcptest.Plan{Transport: "http", URL: url, Token: mcpTokenAll,
		Steps: mcptest.AcceptanceSteps(string(src), `return await tools.everything["get-env"]({})`)})
	mcptest.CheckAcceptance(t, r, wantC.String(), "everything.get-env")

	r = mcptest.RunTSClient(t, mcptest.Plan{Transport: "http", URL: url, Token: mcpTokenNarrow, Steps: []mcptest.Step{
		{Name: "denied", Tool: "execute", Arguments: map[string]any{"code": `return await tools.get_expenses({member_id: "eng-01", quarter: "Q3"})`}},
		{Name: "allowed", Tool: "execute", Arguments: map[string]any{"code": `return (await tools.get_team_members({department: "sales"})).length > 0`}},
	}})
	if s := r.Steps["denied"]; !s.IsError || !strings.Contains(s.Text, `unknown tool "get_expenses"`) {
		t.Errorf("narrow tenant, get_expenses: %+v", s)
	}
	if s := r.Steps["allowed"]; s.IsError || s.Text != "true" {
		t.Errorf("narrow tenant, get_team_members: %+v", s)
	}

	for _, token := range []string{"", "wrong-token"} {
		r = mcptest.RunTSClient(t, mcptest.Plan{Transport: "http", URL: url, Token: token, ExpectConnectError: true})
		if r.ConnectError == nil || !strings.Contains(*r.ConnectError, "unauthenticated: ") {
			t.Errorf("token %q: %v", token, *r.ConnectError)
		}
	}
}

// TestMCPEndpointTLS: the MCP listener uses the tls section, and client
// certificates authenticate there as on gRPC.
func TestMCPEndpointTLS(t *testing.T) {
	pki := newPKI(t)
	cfg := writeFile(t, "ptcd.yaml", fmt.Sprintf(`
demo_tools: true
mcp: {listen: "127.0.0.1:0"}
tls: {cert_file: %s, key_file: %s, client_ca_file: %s}
auth: {enabled: true}
tenants:
  - name: a
    token_hashes: [%q]
  - name: harness
    client_identities: [harness-b]
    tools: [get_expenses]
`, pki.certFile, pki.keyFil, pki.caFile, auth.HashToken(mcpTokenAll)))
	_, _, logs := startPtcd(t, "--config", cfg)
	url := strings.Replace(mcpURL(t, logs), "http://", "https://", 1)
	client := func(token string, certs ...tls.Certificate) *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool, ServerName: "localhost", Certificates: certs, MinVersion: tls.VersionTLS12}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: bearerRT{token: token, next: tr}}
	}
	cases := []struct {
		name  string
		http  *http.Client
		ok    bool
		tools string
	}{
		{"token", client(mcpTokenAll), true, "The 3 tools"},
		{"client certificate of a tenant", client("", pki.issue(t, "harness-b", x509.ExtKeyUsageClientAuth)), true, "The one tool"},
		{"client certificate of no tenant", client("", pki.issue(t, "stranger", x509.ExtKeyUsageClientAuth)), false, ""},
		{"no credentials", client(""), false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := mcpConnectTransport(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: tc.http, MaxRetries: -1}, nil)
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
					t.Fatalf("connected: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l, err := cs.ListTools(context.Background(), nil)
			if err != nil || !strings.Contains(l.Tools[0].Description, tc.tools) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// bearerRT adds a bearer token (when set) on top of another transport.
type bearerRT struct {
	token string
	next  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}
