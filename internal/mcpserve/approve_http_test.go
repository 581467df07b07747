package mcpserve_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// rawHTTP is an MCP client over streamable HTTP written by hand: it
// posts messages as given and reads answers and event streams.
type rawHTTP struct {
	t       *testing.T
	url     string
	id      string // the session id
	version string // the Mcp-Protocol-Version sent ("2025-06-18" when empty)
}

// post sends one body on the session; it returns the response (the
// caller closes its body).
func (c *rawHTTP) post(body string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokenB)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	version := c.version
	if version == "" {
		version = "2025-06-18"
	}
	req.Header.Set("Mcp-Protocol-Version", version)
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// events returns the JSON-RPC messages of an event-stream (or JSON)
// response as they arrive.
func events(resp *http.Response) func() (map[string]json.RawMessage, bool) {
	r := bufio.NewReader(resp.Body)
	return func() (map[string]json.RawMessage, bool) {
		for {
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return nil, false
			}
			data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
			if !ok && strings.HasPrefix(strings.TrimSpace(line), "{") {
				data, ok = strings.TrimSpace(line), true
			}
			if !ok {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(data), &m) == nil {
				return m, true
			}
		}
	}
}

// TestApprovalsHTTPAmbiguousAnswers: over streamable HTTP, an answer to
// the approval question that names a member twice — in the result or in
// the JSON-RPC envelope — denies the call (the SDK alone would read the
// last value, a yes); a clean yes runs it.
func TestApprovalsHTTPAmbiguousAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer func(id string) string
		runs   int64
		want   string
	}{
		{"approved", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"approve":true}}}`
		}, 1, `done c-42`},
		{"approve false then true", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"approve":false,"approve":true}}}`
		}, 0, "denied: the answer to the approval request named a field twice"},
		{"two results", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"decline"},"result":{"action":"accept","content":{"approve":true}}}`
		}, 0, "denied: the answer to the approval request named a field twice"},
		{"an error, then a result", func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-1,"message":"no"},"result":{"action":"accept","content":{"approve":true}}}`
		}, 0, "denied: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			m := mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)})
			srv := httptest.NewServer(m.Handler(mcpserve.HTTPConfig{Authenticate: startLimitedAuth(t)}))
			t.Cleanup(srv.Close)
			t.Cleanup(m.CloseSessions)
			c := &rawHTTP{t: t, url: srv.URL}
			resp := c.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if c.id = resp.Header.Get("Mcp-Session-Id"); c.id == "" {
				t.Fatalf("initialize: %s", resp.Status)
			}
			resp = c.post(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
			resp.Body.Close()
			args, _ := json.Marshal(map[string]any{"name": "execute", "arguments": json.RawMessage(catching("delete_customer"))})
			resp = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":` + string(args) + `}`)
			defer resp.Body.Close()
			next := events(resp)
			asked := 0
			for {
				msg, ok := next()
				if !ok {
					t.Fatal("the call's stream ended without its result")
				}
				if string(msg["method"]) == `"elicitation/create"` {
					asked++
					ans := c.post(tc.answer(string(msg["id"])))
					_, _ = io.Copy(io.Discard, ans.Body)
					ans.Body.Close()
					if ans.StatusCode/100 != 2 {
						t.Fatalf("the answer was refused: %s", ans.Status)
					}
					continue
				}
				if string(msg["id"]) != "2" {
					continue
				}
				var res struct{ Content []struct{ Text string } }
				if json.Unmarshal(msg["result"], &res) != nil || len(res.Content) != 1 {
					t.Fatalf("execute answered %s", msg["result"])
				}
				var out string
				_ = json.Unmarshal([]byte(res.Content[0].Text), &out)
				if !strings.HasPrefix(out, tc.want) || asked != 1 || runs.Load() != tc.runs {
					t.Fatalf("the program saw %q (asked %d times, the tool ran %d times), want %s…", out, asked, runs.Load(), tc.want)
				}
				return
			}
		})
	}
}
