package mcpserve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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
