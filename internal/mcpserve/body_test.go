package mcpserve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// startBodies serves a server with the given HTTP bounds (tenants a and b
// as in startLimited) and returns it with a session id of tenant b.
func startBodies(t *testing.T, hc mcpserve.HTTPConfig) (*mcpserve.Server, *httptest.Server, string) {
	t.Helper()
	hc.Authenticate = startLimitedAuth(t)
	m := mcpserve.New(mcpserve.Config{Backend: newBackend(t)})
	srv := httptest.NewServer(m.Handler(hc))
	t.Cleanup(srv.Close)
	t.Cleanup(m.CloseSessions)
	code, body, id := initialize(t, srv.URL, tokenB, "bodies")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q", code, body)
	}
	return m, srv, id
}

// partialPost opens a connection and sends a POST on session id that
// announces length bytes of body but sends only the first sent; the
// connection is closed at the end of the test.
func partialPost(t *testing.T, srv *httptest.Server, id string, length, sent int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	// A guard against a hang when the bound is missing: the test fails
	// instead of waiting forever.
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\n"+
		"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		srv.Listener.Addr(), tokenB, id, length, strings.Repeat(" ", sent))
	return conn
}

// refusal reads the JSON-RPC error of a refused request.
func refusal(t *testing.T, body []byte) (code int, msg string) {
	t.Helper()
	var m struct {
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("the refusal is not JSON-RPC: %q", body)
	}
	return m.Error.Code, m.Error.Message
}

// TestHTTPBodyReadTimeout: a body that does not arrive within
// BodyReadTimeout is refused with 408 and a JSON-RPC error naming the
// setting, and its connection is closed; what it held is given back.
func TestHTTPBodyReadTimeout(t *testing.T) {
	m, srv, id := startBodies(t, mcpserve.HTTPConfig{BodyReadTimeout: 200 * time.Millisecond})
	conn := partialPost(t, srv, id, 10000, 100)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if code, msg := refusal(t, body); resp.StatusCode != http.StatusRequestTimeout || code != -32000 || !strings.Contains(msg, "mcp.body_read_timeout") || !resp.Close {
		t.Fatalf("stalled body: %d %q (close %v)", resp.StatusCode, body, resp.Close)
	}
	mcpserve.WaitBodyBytes(m, func(held int64) bool { return held == 0 })
}

// TestHTTPBodyBytesInFlight: request bodies being received count against
// MaxBodyBytesInFlight from their first byte; a request past it is refused
// with 503, Retry-After and a JSON-RPC error naming the setting, and the
// room comes back when the held request ends.
func TestHTTPBodyBytesInFlight(t *testing.T) {
	const limit = 64 << 10
	m, srv, id := startBodies(t, mcpserve.HTTPConfig{MaxBodyBytes: limit, MaxBodyBytesInFlight: limit})
	slow := partialPost(t, srv, id, 60000, 1000)
	mcpserve.WaitBodyBytes(m, func(held int64) bool { return held > 60000 })

	c := &rawHTTP{t: t, url: srv.URL, id: id, version: "2025-11-25"}
	call := func() (int, http.Header, []byte) {
		resp := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}` + strings.Repeat(" ", 8000))
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	status, h, body := call()
	if code, msg := refusal(t, body); status != http.StatusServiceUnavailable || code != -32000 || !strings.Contains(msg, "mcp.max_body_bytes_in_flight") || h.Get("Retry-After") == "" {
		t.Fatalf("a body past the bound: %d %q", status, body)
	}
	_ = slow.Close()
	mcpserve.WaitBodyBytes(m, func(held int64) bool { return held == 0 })
	if status, _, body := call(); status != http.StatusOK || !strings.Contains(string(body), `"execute"`) {
		t.Fatalf("after the held request ended: %d %q", status, body)
	}
}

// TestHTTPBodyTooLarge: a body announced or sent past MaxBodyBytes is
// refused with 413 and a JSON-RPC error before it is read whole.
func TestHTTPBodyTooLarge(t *testing.T) {
	m, srv, id := startBodies(t, mcpserve.HTTPConfig{MaxBodyBytes: 64 << 10})
	conn := partialPost(t, srv, id, 1<<30, 10)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if code, msg := refusal(t, body); resp.StatusCode != http.StatusRequestEntityTooLarge || code != -32000 || !strings.Contains(msg, "65536 bytes") {
		t.Fatalf("announced 1 GiB: %d %q", resp.StatusCode, body)
	}
	mcpserve.WaitBodyBytes(m, func(held int64) bool { return held == 0 })
}

// TestHTTPBatchBound: a JSON-RPC batch of more than 64 messages is
// refused with 400 and a JSON-RPC error before any of them is handled;
// one of 64 is not refused for its length. The session keeps serving.
func TestHTTPBatchBound(t *testing.T) {
	_, srv, id := startBodies(t, mcpserve.HTTPConfig{})
	c := &rawHTTP{t: t, url: srv.URL, id: id, version: "2025-03-26"} // a version that allows batches
	post := func(body string) (int, []byte) {
		resp := c.post(body)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	batch := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	status, body := post(batch(65))
	if code, msg := refusal(t, body); status != http.StatusBadRequest || code != -32600 || !strings.Contains(msg, "at most 64 messages") {
		t.Fatalf("65 messages: %d %q", status, body)
	}
	if _, body := post(batch(64)); strings.Contains(string(body), "at most 64 messages") {
		t.Fatalf("64 messages refused for their number: %q", body)
	}
	if status, body := post(`{"jsonrpc":"2.0","id":99,"method":"ping"}`); status != http.StatusOK || !strings.Contains(string(body), `"id":99`) {
		t.Fatalf("the session no longer serves: %d %q", status, body)
	}
}
