package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/policy"
)

// fakeServer is an in-process MCP server (the SDK's own) that records the
// _meta of the calls it gets.
type fakeServer struct {
	srv  *sdk.Server
	mu   sync.Mutex
	meta []map[string]any
}

func newFakeServer() *fakeServer {
	f := &fakeServer{srv: sdk.NewServer(&sdk.Implementation{Name: "fake", Version: "1"}, nil)}
	f.add("echo", func(args json.RawMessage) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(args)}}}
	})
	return f
}

func (f *fakeServer) add(name string, fn func(json.RawMessage) *sdk.CallToolResult) {
	f.srv.AddTool(&sdk.Tool{Name: name, Description: name + " tool", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			f.mu.Lock()
			f.meta = append(f.meta, req.Params.Meta)
			f.mu.Unlock()
			return fn(req.Params.Arguments), nil
		})
}

// inMemory returns a transport factory that connects each new client
// session to f over in-memory pipes, and a function that drops every
// connection made so far.
func (f *fakeServer) inMemory(t *testing.T) (func() sdk.Transport, func()) {
	var mu sync.Mutex
	var sessions []*sdk.ServerSession
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	})
	factory := func() sdk.Transport {
		ct, st := sdk.NewInMemoryTransports()
		ss, err := f.srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Errorf("server connect: %v", err)
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct
	}
	drop := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	}
	return factory, drop
}

func TestInProcessListChanged(t *testing.T) {
	f := newFakeServer()
	tr, _ := f.inMemory(t)
	s := startSource(t, Config{Name: "fake", transport: tr, Required: true})
	ch := changes(s)
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{"fake.echo"}) {
		t.Fatalf("tools = %v", got)
	}
	f.add("added", func(json.RawMessage) *sdk.CallToolResult {
		return &sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}
	})
	waitFor(t, ch, "the added tool", func() bool { return slices.Contains(toolNames(s.Tools()), "fake.added") })
	out, err := callJSON(t, find(t, s, "fake.added"), `{}`)
	if err != nil || string(out) != `{"n":1}` {
		t.Fatalf("added tool: %s, %v", out, err)
	}
	f.srv.RemoveTools("echo")
	waitFor(t, ch, "the removed tool", func() bool { return !slices.Contains(toolNames(s.Tools()), "fake.echo") })
}

func TestInProcessSkipsUnusableTools(t *testing.T) {
	f := newFakeServer()
	ok := func(json.RawMessage) *sdk.CallToolResult { return &sdk.CallToolResult{} }
	f.add("has space", ok)
	f.srv.AddTool(&sdk.Tool{Name: "bad_schema", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 5}}}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	for _, n := range []string{"t1", "t2", "t3"} {
		f.add(n, ok)
	}
	tr, _ := f.inMemory(t)
	s := startSource(t, Config{Name: "fake", transport: tr, Required: true})
	if got := toolNames(s.Tools()); !slices.Equal(got, []string{"fake.echo", "fake.t1", "fake.t2", "fake.t3"}) {
		t.Fatalf("tools = %v", got)
	}
	s2 := startSource(t, Config{Name: "fake", transport: tr, Required: true, MaxTools: 2})
	if got := len(s2.Tools()); got > 2 {
		t.Fatalf("MaxTools 2 gave %d tools", got)
	}
}

func TestInProcessIdempotencyKeyInMeta(t *testing.T) {
	f := newFakeServer()
	tr, _ := f.inMemory(t)
	s := startSource(t, Config{Name: "fake", transport: tr, Required: true})
	out, err := find(t, s, "fake.echo").Handler(context.Background(), tools.Call{ExecutionID: "ex9", Seq: 4, IdempotencyKey: "ex9/4", Arguments: json.RawMessage(`{"x":[1,2]}`)})
	if err != nil || string(out) != `{"x":[1,2]}` {
		t.Fatalf("echo: %s, %v", out, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.meta) != 1 || f.meta[0][MetaIdempotencyKey] != "ex9/4" {
		t.Fatalf("meta = %v, want %s=ex9/4", f.meta, MetaIdempotencyKey)
	}
}

func TestInProcessReconnectAndUnavailable(t *testing.T) {
	f := newFakeServer()
	tr, drop := f.inMemory(t)
	s := startSource(t, Config{Name: "fake", transport: tr, Required: true, ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	var mu sync.Mutex
	var seen []bool
	// Registered before changes(s), so seen is updated before the test wakes.
	s.OnChange(func() {
		mu.Lock()
		seen = append(seen, s.Available())
		mu.Unlock()
	})
	ch := changes(s)
	drop()
	waitFor(t, ch, "down and up again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, false) && len(seen) > 0 && seen[len(seen)-1]
	})
	if _, err := callJSON(t, find(t, s, "fake.echo"), `{}`); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
}

func TestStreamableHTTPHeaders(t *testing.T) {
	f := newFakeServer()
	var mu sync.Mutex
	var auth []string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	s := startSource(t, Config{Name: "web", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer tok"}, HTTPClient: client, Required: true})
	if _, err := callJSON(t, find(t, s, "web.echo"), `{}`); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 {
		t.Fatal("no requests")
	}
	for _, a := range auth {
		if a != "Bearer tok" {
			t.Fatalf("Authorization = %q on some request, want it on all", a)
		}
	}
}

func TestUnreachable(t *testing.T) {
	cfg := Config{Name: "gone", Command: "/nonexistent/mcp-server", Allow: []string{"search", "get-*"},
		ConnectTimeout: 5 * time.Second, ReconnectMin: time.Hour}
	t.Run("required fails start-up", func(t *testing.T) {
		c := cfg
		c.Required = true
		s, err := Start(context.Background(), c)
		if err == nil {
			s.Close()
			t.Fatal("want start-up error")
		}
	})
	t.Run("optional is unavailable", func(t *testing.T) {
		s := startSource(t, cfg)
		if s.Available() || s.Err() == nil {
			t.Fatal("source should be unavailable with an error")
		}
		ts := s.Tools()
		if got := toolNames(ts); !slices.Equal(got, []string{"gone.search"}) {
			t.Fatalf("placeholder tools = %v", got)
		}
		_, err := callJSON(t, ts[0], `{}`)
		if toolErrCode(err) != CodeUnavailable || !policy.IsTransient(err) {
			t.Fatalf("err = %v, want transient %s", err, CodeUnavailable)
		}
	})
	t.Run("unreachable url", func(t *testing.T) {
		hs := httptest.NewServer(http.NotFoundHandler())
		url := hs.URL
		hs.Close()
		s, err := Start(context.Background(), Config{Name: "gone", URL: url, Required: true, ConnectTimeout: 5 * time.Second})
		if err == nil {
			s.Close()
			t.Fatal("want start-up error")
		}
	})
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"stdio", Config{Name: "a", Command: "x"}, true},
		{"http", Config{Name: "a", URL: "https://h/mcp"}, true},
		{"both", Config{Name: "a", Command: "x", URL: "https://h/mcp"}, false},
		{"neither", Config{Name: "a"}, false},
		{"bad name", Config{Name: "1a", Command: "x"}, false},
		{"dotted name", Config{Name: "a.b", Command: "x"}, false},
		{"bad url", Config{Name: "a", URL: "ftp://h"}, false},
		{"bad pattern", Config{Name: "a", Command: "x", Allow: []string{"["}}, false},
		{"bad policy", Config{Name: "a", Command: "x", Policy: policy.Config{Retries: -1}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestResult(t *testing.T) {
	cases := []struct {
		name     string
		res      string // CallToolResult JSON
		want     string
		wantCode string
	}{
		{"structured wins", `{"content":[{"type":"text","text":"ignored"}],"structuredContent":{"a":1}}`, `{"a":1}`, ""},
		{"json text parsed", `{"content":[{"type":"text","text":" [1,2] "}]}`, `[1,2]`, ""},
		{"plain text string", `{"content":[{"type":"text","text":"hello"}]}`, `"hello"`, ""},
		{"empty text", `{"content":[{"type":"text","text":""}]}`, `""`, ""},
		{"no content", `{"content":[]}`, `null`, ""},
		{"several blocks", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, ""},
		{"is error", `{"content":[{"type":"text","text":"boom"}],"isError":true}`, "", CodeToolError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var res sdk.CallToolResult
			if err := json.Unmarshal([]byte(tc.res), &res); err != nil {
				t.Fatal(err)
			}
			out, err := result("x.y", &res)
			if tc.wantCode != "" {
				if toolErrCode(err) != tc.wantCode {
					t.Fatalf("err = %v, want %s", err, tc.wantCode)
				}
				return
			}
			if err != nil || string(out) != tc.want {
				t.Fatalf("Result = %s, %v, want %s", out, err, tc.want)
			}
		})
	}
}

func FuzzResult(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"{\"a\":1}"}]}`)
	f.Add(`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"x"}]}`)
	f.Add(`{"structuredContent":[1,{"b":null}],"content":[]}`)
	f.Add(`{"isError":true,"content":[{"type":"text","text":"` + string(make([]byte, 10)) + `"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var res sdk.CallToolResult
		if json.Unmarshal([]byte(doc), &res) != nil {
			return
		}
		out, err := result("x.y", &res)
		if err != nil {
			if toolErrCode(err) == "" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("result is not JSON: %q", out)
		}
	})
}

func BenchmarkInProcessCall(b *testing.B) {
	f := newFakeServer()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := f.srv.Connect(context.Background(), st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	s, err := Start(context.Background(), Config{Name: "fake", transport: func() sdk.Transport { return ct }, Required: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := s.Tools()[0].Handler
	c := tools.Call{ExecutionID: "e", Seq: 1, IdempotencyKey: "e/1", Arguments: json.RawMessage(`{"q":"x"}`)}
	for b.Loop() {
		if _, err := h(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestApprovalFromAnnotations: a source's approval policy applied to the
// annotations its server gives each tool.
func TestApprovalFromAnnotations(t *testing.T) {
	f := newFakeServer() // echo: no annotations
	no := false
	for _, tl := range []struct {
		name string
		ann  *sdk.ToolAnnotations
	}{
		{"read", &sdk.ToolAnnotations{ReadOnlyHint: true}},
		{"write", &sdk.ToolAnnotations{DestructiveHint: &no}},
		{"drop", &sdk.ToolAnnotations{}}, // destructive unless said otherwise
	} {
		f.srv.AddTool(&sdk.Tool{Name: tl.name, InputSchema: map[string]any{"type": "object"}, Annotations: tl.ann},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
	}
	tr, _ := f.inMemory(t)
	for _, tc := range []struct {
		policy string
		want   []string // the tools that need approval
	}{
		{"", nil},
		{"none", nil},
		{"all", []string{"fake.drop", "fake.echo", "fake.read", "fake.write"}},
		{"not_read_only", []string{"fake.drop", "fake.echo", "fake.write"}},
		{"destructive", []string{"fake.drop", "fake.echo"}},
	} {
		t.Run("policy "+tc.policy, func(t *testing.T) {
			s := startSource(t, Config{Name: "fake", transport: tr, Required: true, Approval: tc.policy})
			var got []string
			for _, tl := range s.Tools() {
				if tl.Definition.RequiresApproval {
					got = append(got, tl.Definition.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("approval %q: %v need approval, want %v", tc.policy, got, tc.want)
			}
		})
	}
	if err := (&Config{Name: "fake", Command: "x", Approval: "sometimes"}).Validate(); err == nil || !strings.Contains(err.Error(), `approval "sometimes" is unknown`) {
		t.Fatalf("unknown policy: %v", err)
	}
}
