package adversarial

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// Cases against ptcd's MCP endpoint (testdata/transport.yaml turns it on
// with authentication, a 2 s body read timeout and approvals for
// get_budget_by_level): request bodies held unfinished (transport), and
// elicitation answers that name a field twice (approvals).

// mcpSession opens an MCP session on ptcd's endpoint with the tenant's
// token and returns its id.
func mcpSession(mcpAddr string) (string, error) {
	resp, err := mcpPost(mcpAddr, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"adversary","version":"1"}}}`)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", fmt.Errorf("initialize answered %s without a session", resp.Status)
	}
	resp, err = mcpPost(mcpAddr, id, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	return id, nil
}

// mcpPost posts one body to ptcd's MCP endpoint with the tenant's token,
// on session id when it is set; the caller closes the response's body.
func mcpPost(mcpAddr, id, body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", "http://"+mcpAddr+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+transportToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	return http.DefaultClient.Do(req)
}

// stalledBodies opens n connections that each post, on an authenticated
// MCP session, a body announced as size bytes and send all of it but the
// last KiB, then wait for ptcd's answer; ptcd's RSS must grow by at most
// growth, and every connection must be answered 408 (its body stalled)
// or 503 (the bodies held by all requests reached their bound).
func stalledBodies(e *env, n, size int, growth int64) {
	s, mcpAddr, stop, err := authServer(e)
	if err != nil {
		e.fail("starting an authenticating ptcd: %v", err)
		return
	}
	defer stop()
	id, err := mcpSession(mcpAddr)
	if err != nil {
		e.fail("opening an MCP session: %v", err)
		return
	}
	before, _ := rssOf(s.pid())
	sampler := sampleRSS(s.pid())
	chunk := []byte(strings.Repeat(" ", 64<<10))
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range n {
		wg.Add(1)
		// Each connection's goroutine ends when ptcd answered or closed
		// it, or after a minute.
		go func() {
			defer wg.Done()
			code := -1
			defer func() {
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			}()
			c, err := net.Dial("tcp", mcpAddr)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\n"+
				"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n",
				mcpAddr, transportToken, id, size)
			// The writes stop at the first error: ptcd refused the body
			// and closed the connection.
			for sent := 0; sent < size-1024; {
				k := min(len(chunk), size-1024-sent)
				if _, err := c.Write(chunk[:k]); err != nil {
					break
				}
				sent += k
			}
			if res, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				code = res.StatusCode
				_ = res.Body.Close()
			}
		}()
	}
	wg.Wait()
	peak := sampler.stop()
	e.note("%d stalled %s bodies: answers %v; ptcd RSS %s → peak %s (+%s)", n, mib(int64(size)), statuses, mib(before), mib(peak), mib(peak-before))
	for code, k := range statuses {
		if code != http.StatusRequestTimeout && code != http.StatusServiceUnavailable {
			e.fail("%d connections answered %d, want 408 or 503", k, code)
		}
	}
	if grew := peak - before; grew > growth {
		e.fail("ptcd's RSS grew by %s under the stalled bodies, more than the %s allowed", mib(grew), mib(growth))
	}
	if err := trivialAuth(s); err != nil {
		e.fail("after the stalled bodies, an authenticated execution failed: %v", err)
	}
}

// mcpTransportCases are the MCP body floods (family transport).
func mcpTransportCases() []tcase {
	bodies := func(name string, fast bool, n int) tcase {
		return tcase{
			name: name, family: famTransport, fast: fast, bound: 90 * time.Second, want: checkedByDo,
			do: func(_ context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				// The MCP SDK alone buffered every such body whole and
				// waited for its end forever: 40 × 15 MB grew ptcd by
				// 1.2 GB.
				stalledBodies(e, n, 15_000_000, 160<<20)
				return nil, nil
			},
		}
	}
	return []tcase{
		bodies("mcp-stalled-15mb-bodies-40", false, 40),
		bodies("mcp-stalled-15mb-bodies-8", true, 8),
	}
}

// mcpAnswer is one answer to an approval question put through MCP
// elicitation, as a JSON-RPC response (%s is the question's id).
type mcpAnswer struct {
	name     string
	answer   string
	approves bool
	fast     bool
}

func mcpAnswers() []mcpAnswer {
	return []mcpAnswer{
		{"approved", `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"approve":true}}}`, true, true},
		{"approve-false-then-true", `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"approve":false,"approve":true}}}`, false, true},
		{"approve-escaped-twice", `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"approve":false,"appr\u006fve":true}}}`, false, false},
		{"decline-then-accept", `{"jsonrpc":"2.0","id":%s,"result":{"action":"decline","action":"accept","content":{"approve":true}}}`, false, false},
		{"two-results", `{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"},"result":{"action":"accept","content":{"approve":true}}}`, false, false},
		{"accept-no-content", `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, false, false},
	}
}

// approveOverMCP runs gatedScript through ptcd's MCP execute tool and
// answers its approval question with a; it returns what the program
// returned.
func approveOverMCP(e *env, a mcpAnswer) (string, error) {
	_, mcpAddr, stop, err := authServer(e)
	if err != nil {
		return "", fmt.Errorf("starting an authenticating ptcd: %v", err)
	}
	defer stop()
	id, err := mcpSession(mcpAddr)
	if err != nil {
		return "", err
	}
	args, _ := json.Marshal(map[string]any{"name": "execute", "arguments": map[string]string{"code": gatedScript}})
	resp, err := mcpPost(mcpAddr, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+string(args)+`}`)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	asked := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("the call's stream ended without its result (%s): %v", resp.Status, err)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok {
			continue
		}
		var m struct {
			ID     json.RawMessage
			Method string
			Result struct{ Content []struct{ Text string } }
		}
		if json.Unmarshal([]byte(data), &m) != nil {
			continue
		}
		if m.Method == "elicitation/create" {
			asked++
			ans, err := mcpPost(mcpAddr, id, fmt.Sprintf(a.answer, m.ID))
			if err != nil {
				return "", err
			}
			_, _ = io.Copy(io.Discard, ans.Body)
			ans.Body.Close()
			continue
		}
		if string(m.ID) != "2" {
			continue
		}
		if asked != 1 || len(m.Result.Content) != 1 {
			return "", fmt.Errorf("asked %d times; execute answered %s", asked, data)
		}
		var out string
		if err := json.Unmarshal([]byte(m.Result.Content[0].Text), &out); err != nil {
			return "", fmt.Errorf("the program returned %s", m.Result.Content[0].Text)
		}
		return out, nil
	}
}

// mcpApprovalsCases put the approval question through ptcd's MCP endpoint
// (family approvals): only a clean yes runs the call; an answer naming a
// field twice, which the SDK would read as its last value, denies it.
func mcpApprovalsCases() []tcase {
	var cs []tcase
	for _, a := range mcpAnswers() {
		want := "denied"
		if a.approves {
			want = "ran"
		}
		cs = append(cs, tcase{
			name: "approval-mcp-" + a.name, family: famApprovals, fast: a.fast, bound: 60 * time.Second, want: checkedByDo,
			do: func(_ context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
				got, err := approveOverMCP(e, a)
				switch {
				case err != nil:
					e.fail("%v", err)
				case got != want:
					e.fail("the program saw %q, want %q", got, want)
				}
				return nil, nil
			},
		})
	}
	return cs
}
