package mcpserve_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// TestApprovalsRawAnswers: answers to the approval question as a client
// that checks nothing may send them, written on the wire by hand (the
// SDK's client refuses to send most of them). Only the action accept with
// content {"approve": true} runs the tool; every other shape denies it,
// in plain words without the SDK's. An answer that names a field twice
// (which the SDK would read as its last value) is ambiguous: denied.
func TestApprovalsRawAnswers(t *testing.T) {
	const (
		unclear   = "denied: the answer to the approval request was not a clear yes (approve must be the boolean true, and nothing else may be set); the call is denied"
		ambiguous = "denied: the answer to the approval request named a field twice, so it was not a clear yes; the call is denied"
	)
	cases := []struct {
		name, answer string
		runs         int64
		want         string
	}{
		{"approved", `{"action":"accept","content":{"approve":true}}`, 1, `done c-42`},
		{"accept without content", `{"action":"accept"}`, 0, `denied: the user did not allow the call`},
		{"accept with null content", `{"action":"accept","content":null}`, 0, `denied: the user did not allow the call`},
		{"untouched form", `{"action":"accept","content":{}}`, 0, `denied: the user did not allow the call`},
		{"approve false", `{"action":"accept","content":{"approve":false}}`, 0, `denied: the user did not allow the call`},
		{"approve the string true", `{"action":"accept","content":{"approve":"true"}}`, 0, unclear},
		{"approve the number 1", `{"action":"accept","content":{"approve":1}}`, 0, unclear},
		{"approve null", `{"action":"accept","content":{"approve":null}}`, 0, unclear},
		{"approve an array", `{"action":"accept","content":{"approve":[true]}}`, 0, unclear},
		{"approve with an unknown field", `{"action":"accept","content":{"approve":true,"scope":"all"}}`, 0, unclear},
		{"an unknown field only", `{"action":"accept","content":{"approved":true}}`, 0, unclear},
		{"decline", `{"action":"decline"}`, 0, `denied: the user declined the call`},
		{"decline with approve true", `{"action":"decline","content":{"approve":true}}`, 0, `denied: the user declined the call`},
		{"cancel", `{"action":"cancel"}`, 0, `denied: the user dismissed the approval request`},
		{"no action", `{"content":{"approve":true}}`, 0, `denied: the user dismissed the approval request`},
		{"empty answer", `{}`, 0, `denied: the user dismissed the approval request`},
		{"action in capitals", `{"action":"ACCEPT","content":{"approve":true}}`, 0, `denied: the user dismissed the approval request`},
		{"action not a string", `{"action":true,"content":{"approve":true}}`, 0, `denied: `},
		{"answer not an object", `true`, 0, `denied: `},
		{"answer null", `null`, 0, `denied: `},
		{"approve false then true", `{"action":"accept","content":{"approve":false,"approve":true}}`, 0, ambiguous},
		{"approve true twice", `{"action":"accept","content":{"approve":true,"approve":true}}`, 0, ambiguous},
		{"approve escaped twice", `{"action":"accept","content":{"approve":false,"appr\u006fve":true}}`, 0, ambiguous},
		{"decline then accept", `{"action":"decline","action":"accept","content":{"approve":true}}`, 0, ambiguous},
		{"content twice", `{"action":"accept","content":{},"content":{"approve":true}}`, 0, ambiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			got := rawApproval(t, mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)}), formElicitation, json.RawMessage(tc.answer))
			if !strings.HasPrefix(got, tc.want) || (tc.want == "denied: " && strings.Contains(got, "json")) {
				t.Fatalf("the program saw %q, want %s…", got, tc.want)
			}
			if runs.Load() != tc.runs {
				t.Fatalf("the tool ran %d times, want %d", runs.Load(), tc.runs)
			}
		})
	}
}

// TestApprovalsURLElicitationOnly: a client that declares elicitation in
// URL mode only cannot be shown the approval form: the call is denied
// without asking, as for a client without elicitation.
func TestApprovalsURLElicitationOnly(t *testing.T) {
	var runs atomic.Int64
	got := rawApproval(t, mcpserve.New(mcpserve.Config{Backend: approvalBackend(t, &runs)}), `{"url":{}}`, nil)
	if !strings.HasPrefix(got, "denied: tool delete_customer needs approval and this MCP client cannot ask for it") || runs.Load() != 0 {
		t.Fatalf("the program saw %q; the tool ran %d times", got, runs.Load())
	}
}

// formElicitation is the elicitation capability of a client that shows
// forms (no mode declared means form).
const formElicitation = `{}`

// rawApproval runs catching("delete_customer") on s through a client
// written by hand over an in-memory transport: it declares the
// elicitation capability elicitation (JSON), answers an approval question
// with answer as the result, and returns what the program returned (a
// JSON string, unquoted). answer nil: the client must not be asked.
func rawApproval(t *testing.T, s *mcpserve.Server, elicitation string, answer json.RawMessage) string {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The server goroutine ends when the connection closes or ctx is
	// cancelled (cleanup).
	go func() { done <- s.Run(ctx, st) }()
	conn, err := ct.Connect(ctx)
	if err != nil {
		cancel()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		<-done
	})
	id := func(n int) jsonrpc.ID {
		v, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	write := func(m jsonrpc.Message) {
		if err := conn.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	write(&jsonrpc.Request{ID: id(1), Method: "initialize", Params: json.RawMessage(
		`{"protocolVersion":"2025-06-18","capabilities":{"elicitation":` + elicitation + `},"clientInfo":{"name":"raw","version":"1"}}`)})
	write(&jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	params, err := json.Marshal(map[string]any{"name": "execute", "arguments": json.RawMessage(catching("delete_customer"))})
	if err != nil {
		t.Fatal(err)
	}
	write(&jsonrpc.Request{ID: id(2), Method: "tools/call", Params: params})
	asked := 0
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			if m.Method != "elicitation/create" || !m.ID.IsValid() {
				continue
			}
			asked++
			write(&jsonrpc.Response{ID: m.ID, Result: answer})
		case *jsonrpc.Response:
			if m.ID != id(2) {
				continue
			}
			if m.Error != nil {
				t.Fatalf("execute failed: %v", m.Error)
			}
			var res struct {
				Content []struct{ Text string }
				IsError bool
			}
			if wantAsked := map[bool]int{true: 1}[answer != nil]; json.Unmarshal(m.Result, &res) != nil || len(res.Content) != 1 || res.IsError || asked != wantAsked {
				t.Fatalf("execute answered %s, asked %d times", m.Result, asked)
			}
			var out string
			if err := json.Unmarshal([]byte(res.Content[0].Text), &out); err != nil {
				t.Fatalf("the program returned %s", res.Content[0].Text)
			}
			return out
		}
	}
}
