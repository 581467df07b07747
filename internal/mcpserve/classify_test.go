package mcpserve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// goText is what must never reach a client: Go's decoder errors, Go and
// SDK type names.
var goText = regexp.MustCompile(`Go struct|unmarshal|json: |\*mcp\.|mcp\.[A-Za-z]+Params|interface \{\}|map\[string\]|jsonrpc2`)

// badMessages are messages the SDK fails to decode, and the classified
// message each must be answered with.
var badMessages = []struct {
	name, body, want string
}{
	{"tools/call name not a string", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":5}}`,
		"invalid params for tools/call: a parameter has the wrong JSON type or a required one is missing"},
	{"tools/list cursor not a string", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":7}}`,
		"invalid params for tools/list: a parameter has the wrong JSON type"},
	{"initialize with a number version", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":5}}`,
		"invalid params for initialize: "},
}

// TestSDKErrorsClassified: requests the MCP SDK cannot decode are
// answered with classified JSON-RPC errors — over HTTP (in event streams,
// and HTTP errors the SDK writes as text) and over stdio — never with the
// SDK's Go error text; an error that holds none keeps its words.
func TestSDKErrorsClassified(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		m := mcpserve.New(mcpserve.Config{Backend: newBackend(t)})
		srv := httptest.NewServer(m.Handler(mcpserve.HTTPConfig{Authenticate: startLimitedAuth(t)}))
		t.Cleanup(srv.Close)
		t.Cleanup(m.CloseSessions)
		c := &rawHTTP{t: t, url: srv.URL}
		resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.id = resp.Header.Get("Mcp-Session-Id")
		resp = c.post(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
		resp.Body.Close()
		cases := append(badMessages[:len(badMessages):len(badMessages)],
			struct{ name, body, want string }{"not JSON (HTTP 400)", `not json`, "the request is not a valid MCP message"},
			struct{ name, body, want string }{"an id that is an object (HTTP 400)", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "the request is not a valid MCP message"},
			struct{ name, body, want string }{"an unknown tool keeps its words", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}`, `unknown tool "nope"`},
			// The SDK quotes these whole; they come back cut.
			struct{ name, body, want string }{"a megabyte of method", `{"jsonrpc":"2.0","id":6,"method":"` + strings.Repeat("m", 1<<20) + `"}`, "mmmm"},
			struct{ name, body, want string }{"a megabyte of tool name", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + strings.Repeat("n", 1<<20) + `"}}`, "nnnn"},
		)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				resp := c.post(tc.body)
				defer resp.Body.Close()
				msg, ok := events(resp)()
				if !ok {
					t.Fatalf("no JSON-RPC answer (%s)", resp.Status)
				}
				var e struct{ Message string }
				_ = json.Unmarshal(msg["error"], &e)
				if !strings.Contains(e.Message, tc.want) || goText.MatchString(e.Message) || len(e.Message) > 2<<10 {
					t.Fatalf("answered %.300s (%d bytes), want a short classified message with %q", msg["error"], len(e.Message), tc.want)
				}
			})
		}
	})
	t.Run("stdio", func(t *testing.T) {
		ct, st := sdk.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		// The server goroutine ends when ctx is cancelled (cleanup).
		go func() { done <- mcpserve.New(mcpserve.Config{Backend: newBackend(t)}).Run(ctx, st) }()
		conn, err := ct.Connect(ctx)
		if err != nil {
			cancel()
			<-done
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close(); cancel(); <-done })
		write := func(raw string) {
			m, err := jsonrpc.DecodeMessage([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.Write(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		write(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
		for _, tc := range badMessages[:2] {
			write(tc.body)
			for {
				m, err := conn.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r, ok := m.(*jsonrpc.Response)
				if !ok || r.Error == nil {
					continue
				}
				if msg := r.Error.Error(); !strings.Contains(msg, tc.want) || goText.MatchString(msg) {
					t.Fatalf("%s: answered %q, want a classified message with %q", tc.name, msg, tc.want)
				}
				break
			}
		}
	})
}
