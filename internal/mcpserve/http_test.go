package mcpserve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/auth"
	"github.com/ptcrun/ptc/internal/mcpserve"
)

const (
	tokenA = "token-of-tenant-a-0123456789"
	tokenB = "token-of-tenant-b-0123456789"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// startHTTP serves s over HTTP with ptcd's authentication: tenant a may use
// get_team_members only, tenant b every tool.
func startHTTP(t *testing.T, s *mcpserve.Server, maxBody int64) *httptest.Server {
	t.Helper()
	a, err := auth.New(true, []auth.Tenant{
		{Name: "a", TokenHashes: []string{auth.HashToken(tokenA)}, Tools: []string{"get_team_members"}},
		{Name: "b", TokenHashes: []string{auth.HashToken(tokenB)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler(mcpserve.HTTPConfig{MaxBodyBytes: maxBody, Authenticate: func(r *http.Request) (mcpserve.Caller, error) {
		tn, err := a.AuthenticateHTTP(r)
		if err != nil {
			return mcpserve.Caller{}, err
		}
		return mcpserve.Caller{Key: tn.Name, Bind: func(ctx context.Context) context.Context { return auth.WithTenant(ctx, tn) }}, nil
	}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func connectHTTP(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// TestHTTPTenants: every request authenticates; each tenant's session sees
// and calls only the tenant's tools; a session answers only the tenant
// that opened it.
func TestHTTPTenants(t *testing.T) {
	srv := startHTTP(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}), 0)

	for _, token := range []string{"", "not-a-token"} {
		if _, err := connectHTTP(t, srv.URL, token); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Fatalf("token %q: %v", token, err)
		}
	}

	a, err := connectHTTP(t, srv.URL, tokenA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := connectHTTP(t, srv.URL, tokenB)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := la.Tools[0].Description; !strings.Contains(d, "The one tool") || strings.Contains(d, "get_expenses") {
		t.Fatalf("tenant a's description:\n%s", d)
	}
	if d := lb.Tools[0].Description; !strings.Contains(d, "The 3 tools") {
		t.Fatalf("tenant b's description:\n%s", d)
	}
	res := call(t, a, "execute", codeArgs(`return await tools.get_expenses({member_id: "eng-01", quarter: "Q3"})`))
	if !res.IsError || !strings.Contains(text(res), "unknown tool") {
		t.Fatalf("tenant a called get_expenses: %s", text(res))
	}
	if res := call(t, b, "execute", codeArgs(`return (await tools.get_expenses({member_id: "eng-01", quarter: "Q3"})).length > 0`)); res.IsError || text(res) != "true" {
		t.Fatalf("tenant b: %s", text(res))
	}
	if res := call(t, a, "search", `{"query":"expenses"}`); !strings.Contains(text(res), "No tool matches") {
		t.Fatalf("tenant a's search: %s", text(res))
	}

	// Raw requests on tenant a's session.
	post := func(token, session string, extra map[string]string) int {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range extra {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(tokenA, a.ID(), nil); code != http.StatusOK {
		t.Fatalf("tenant a on its session: %d", code)
	}
	if code := post(tokenB, a.ID(), nil); code != http.StatusNotFound {
		t.Fatalf("tenant b on tenant a's session: %d", code)
	}
	if code := post(tokenA, a.ID(), map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Fatalf("a browser's cross-site request: %d", code)
	}
	// The sessions keep serving.
	if res := call(t, a, "execute", codeArgs("return 1")); res.IsError {
		t.Fatal(text(res))
	}
}

// TestHTTPBodyLimit: a request larger than MaxBodyBytes is refused (413)
// and the server keeps serving.
func TestHTTPBodyLimit(t *testing.T) {
	srv := startHTTP(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}), 64<<10)
	cs, err := connectHTTP(t, srv.URL, tokenB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute",
		Arguments: map[string]any{"code": "return 1;" + strings.Repeat(" ", 64<<10)}}); err == nil || !strings.Contains(err.Error(), "Too Large") {
		t.Fatalf("oversized request: %v", err)
	}
	cs2, err := connectHTTP(t, srv.URL, tokenB)
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs2, "execute", codeArgs("return 2")); res.IsError || text(res) != "2" {
		t.Fatal(text(res))
	}
}

// startLimited serves s with the given session caps: tenants a and b as in
// startHTTP.
func startLimited(t *testing.T, hc mcpserve.HTTPConfig) *httptest.Server {
	t.Helper()
	hc.Authenticate = startLimitedAuth(t)
	m := mcpserve.New(mcpserve.Config{Backend: newBackend(t)})
	srv := httptest.NewServer(m.Handler(hc))
	t.Cleanup(srv.Close)
	t.Cleanup(m.CloseSessions) // the sessions opened by raw initializes
	return srv
}

// startLimitedAuth authenticates tenants a and b, each with every tool.
func startLimitedAuth(t *testing.T) func(r *http.Request) (mcpserve.Caller, error) {
	t.Helper()
	a, err := auth.New(true, []auth.Tenant{
		{Name: "a", TokenHashes: []string{auth.HashToken(tokenA)}},
		{Name: "b", TokenHashes: []string{auth.HashToken(tokenB)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) (mcpserve.Caller, error) {
		tn, err := a.AuthenticateHTTP(r)
		if err != nil {
			return mcpserve.Caller{}, err
		}
		return mcpserve.Caller{Key: tn.Name, Bind: func(ctx context.Context) context.Context { return auth.WithTenant(ctx, tn) }}, nil
	}
}

// initialize posts an initialize without a session id; it returns the
// status, the body and the session id the server gave.
func initialize(t *testing.T, url, token, clientName string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":` +
		strconv.Quote(clientName) + `,"version":"1"}}}`
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Mcp-Session-Id")
}

// TestHTTPOpenBodyLimit: a request that opens a session is bounded by
// MaxOpenBodyBytes (413 with a message saying so), while requests on a
// session keep MaxBodyBytes; the server keeps serving.
func TestHTTPOpenBodyLimit(t *testing.T) {
	srv := startLimited(t, mcpserve.HTTPConfig{MaxOpenBodyBytes: 4 << 10})
	code, body, _ := initialize(t, srv.URL, tokenA, strings.Repeat("n", 8<<10))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "opens an MCP session") || !strings.Contains(body, "4096 bytes") {
		t.Fatalf("oversized initialize: %d %q", code, body)
	}
	if code, body, id := initialize(t, srv.URL, tokenA, "small"); code != http.StatusOK || id == "" {
		t.Fatalf("small initialize: %d %q", code, body)
	}
	cs, err := connectHTTP(t, srv.URL, tokenA)
	if err != nil {
		t.Fatal(err)
	}
	// A call on the session may be larger than an opening request.
	if res := call(t, cs, "execute", codeArgs("return 3;"+strings.Repeat(" ", 16<<10))); res.IsError || text(res) != "3" {
		t.Fatal(text(res))
	}
}

// TestHTTPSessionCaps: a new session past the tenant's cap is refused with
// 429, past the server's with 503, each naming its limit; existing
// sessions keep serving, and ending one frees its place.
func TestHTTPSessionCaps(t *testing.T) {
	srv := startLimited(t, mcpserve.HTTPConfig{MaxSessionsPerCaller: 2, MaxSessions: 3})
	a1, err := connectHTTP(t, srv.URL, tokenA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connectHTTP(t, srv.URL, tokenA); err != nil {
		t.Fatal(err)
	}
	code, body, _ := initialize(t, srv.URL, tokenA, "third")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "limit is 2") || !strings.Contains(body, "mcp.max_sessions_per_tenant") {
		t.Fatalf("tenant a's third session: %d %q", code, body)
	}
	b1, err := connectHTTP(t, srv.URL, tokenB)
	if err != nil {
		t.Fatalf("tenant b under its cap: %v", err)
	}
	code, body, _ = initialize(t, srv.URL, tokenB, "fourth")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "limit is 3 in all") || !strings.Contains(body, "mcp.max_sessions") {
		t.Fatalf("the fourth session in all: %d %q", code, body)
	}
	if _, err := connectHTTP(t, srv.URL, tokenB); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("client past the server's cap: %v", err)
	}
	// The open sessions keep serving.
	for _, cs := range []*sdk.ClientSession{a1, b1} {
		if res := call(t, cs, "execute", codeArgs("return 4")); res.IsError || text(res) != "4" {
			t.Fatal(text(res))
		}
	}
	// Ending a session (HTTP DELETE) frees its place.
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	if code, body, id := initialize(t, srv.URL, tokenB, "after"); code != http.StatusOK || id == "" {
		t.Fatalf("after a session ended: %d %q", code, body)
	}
}
