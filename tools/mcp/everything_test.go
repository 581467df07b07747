package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ptcrun/ptc/tools"
)

func callJSON(t *testing.T, tl tools.Tool, args string) (json.RawMessage, error) {
	t.Helper()
	return tl.Handler(context.Background(), tools.Call{ExecutionID: "ex", Seq: 1, IdempotencyKey: "ex/1", Tool: tl.Name, Arguments: json.RawMessage(args)})
}

func TestEverythingStdio(t *testing.T) {
	bin := everythingBin(t)
	s := startSource(t, Config{Name: "everything", Command: bin, Args: []string{"stdio"}, Required: true})
	names := toolNames(s.Tools())
	for _, want := range []string{"everything.echo", "everything.get-sum", "everything.get-structured-content"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}
	sc := find(t, s, "everything.get-structured-content")
	if len(sc.OutputSchema) == 0 || !strings.Contains(string(sc.InputSchema), "location") {
		t.Fatalf("schemas not carried over: in=%s out=%s", sc.InputSchema, sc.OutputSchema)
	}
	if _, err := tools.Compile(sc); err != nil {
		t.Fatalf("tool does not compile: %v", err)
	}

	cases := []struct {
		name, tool, args string
		want             string // exact JSON result
		wantCode         string
	}{
		{"echo text becomes string", "everything.echo", `{"message":"hi there"}`, `"Echo: hi there"`, ""},
		{"sum", "everything.get-sum", `{"a":2,"b":3}`, `"The sum of 2 and 3 is 5."`, ""},
		{"structured content", "everything.get-structured-content", `{"location":"Chicago"}`, `{"conditions":"Light rain / drizzle","humidity":82,"temperature":36}`, ""},
		{"isError result", "everything.get-sum", `{"a":"two","b":3}`, "", CodeToolError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := callJSON(t, find(t, s, tc.tool), tc.args)
			if tc.wantCode != "" {
				if toolErrCode(err) != tc.wantCode {
					t.Fatalf("err = %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if string(out) != tc.want {
				t.Fatalf("result = %s, want %s", out, tc.want)
			}
		})
	}

	t.Run("several content blocks become a document", func(t *testing.T) {
		out, err := callJSON(t, find(t, s, "everything.get-tiny-image"), `{}`)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		}
		if err := json.Unmarshal(out, &doc); err != nil || len(doc.Content) < 2 {
			t.Fatalf("result = %.200s (%v)", out, err)
		}
		if !slices.ContainsFunc(doc.Content, func(c struct {
			Type string `json:"type"`
		}) bool {
			return c.Type == "image"
		}) {
			t.Fatalf("no image block in %.200s", out)
		}
	})

	t.Run("chain", func(t *testing.T) {
		// As a script would: read the weather, add to its temperature, echo.
		out, err := callJSON(t, find(t, s, "everything.get-structured-content"), `{"location":"Los Angeles"}`)
		if err != nil {
			t.Fatal(err)
		}
		var w struct{ Temperature float64 }
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatal(err)
		}
		out, err = callJSON(t, find(t, s, "everything.get-sum"), fmt.Sprintf(`{"a":%v,"b":%v}`, w.Temperature, 27))
		if err != nil {
			t.Fatal(err)
		}
		var sum string
		if err := json.Unmarshal(out, &sum); err != nil {
			t.Fatal(err)
		}
		msg, _ := json.Marshal(map[string]string{"message": sum})
		out, err = callJSON(t, find(t, s, "everything.echo"), string(msg))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `"Echo: The sum of 73 and 27 is 100."` {
			t.Fatalf("chain result = %s", out)
		}
	})
}

func TestEverythingListChanged(t *testing.T) {
	bin := everythingBin(t)
	// The server registers more tools once the client has initialised and
	// announces them with notifications/tools/list_changed.
	s := startSource(t, Config{Name: "everything", Command: bin, Required: true})
	ch := changes(s)
	waitFor(t, ch, "tools/list_changed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.listChanged > 0 && slices.Contains(toolNames(s.toolList), "everything.get-roots-list")
	})
}

func TestEverythingAllowDeny(t *testing.T) {
	bin := everythingBin(t)
	cases := []struct {
		name        string
		allow, deny []string
		want        []string
	}{
		{"allow exact", []string{"echo", "get-sum"}, nil, []string{"everything.echo", "everything.get-sum"}},
		{"allow pattern deny one", []string{"get-s*"}, []string{"get-sum"}, []string{"everything.get-structured-content"}},
		{"deny only", nil, []string{"*"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startSource(t, Config{Name: "everything", Command: bin, Required: true, Allow: tc.allow, Deny: tc.deny})
			if got := toolNames(s.Tools()); !slices.Equal(got, tc.want) {
				t.Fatalf("tools = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEverythingStdioReconnect(t *testing.T) {
	bin := everythingBin(t)
	s := startSource(t, Config{Name: "everything", Command: bin, Required: true, Allow: []string{"echo"},
		ReconnectMin: 10e6, ReconnectMax: 100e6})
	ch := changes(s)
	s.mu.Lock()
	first := s.cmd
	s.mu.Unlock()
	if first == nil || first.Process == nil {
		t.Fatal("no server process")
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "the source to notice the dead server", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cmd != first
	})
	waitFor(t, ch, "a new server", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.cmd != nil && s.cmd != first
	})
	out, err := callJSON(t, find(t, s, "everything.echo"), `{"message":"again"}`)
	if err != nil || string(out) != `"Echo: again"` {
		t.Fatalf("after reconnect: %s, %v", out, err)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	bin := everythingBin(t)
	url, stop := httpEverything(t, bin, 0)
	s := startSource(t, Config{Name: "remote", URL: url, Required: true, Allow: []string{"echo", "get-structured-content"},
		ReconnectMin: 10e6, ReconnectMax: 200e6})
	ch := changes(s)
	out, err := callJSON(t, find(t, s, "remote.echo"), `{"message":"over http"}`)
	if err != nil || string(out) != `"Echo: over http"` {
		t.Fatalf("echo: %s, %v", out, err)
	}
	out, err = callJSON(t, find(t, s, "remote.get-structured-content"), `{"location":"New York"}`)
	if err != nil || !strings.Contains(string(out), `"temperature":33`) {
		t.Fatalf("structured: %s, %v", out, err)
	}

	// The server dies; calls answer "unavailable" or the source notices on
	// its own; a new server on the same port is picked up.
	port := strings.TrimSuffix(strings.TrimPrefix(url, "http://127.0.0.1:"), "/mcp")
	stop()
	_, err = callJSON(t, find(t, s, "remote.echo"), `{"message":"x"}`)
	if code := toolErrCode(err); code != CodeUnavailable {
		t.Fatalf("call to a dead server: %v, want code %s", err, CodeUnavailable)
	}
	var p int
	fmt.Sscan(port, &p)
	httpEverything(t, bin, p)
	waitFor(t, ch, "reconnection", s.Available)
	out, err = callJSON(t, find(t, s, "remote.echo"), `{"message":"back"}`)
	if err != nil || string(out) != `"Echo: back"` {
		t.Fatalf("after reconnect: %s, %v", out, err)
	}
}

// TestEverythingStdioSpan: a call to a server run as a child process over
// stdio is a client span with the MCP attributes of a pipe: the JSON-RPC
// request id, the protocol version, network.transport pipe, and no session
// id (stdio has none).
func TestEverythingStdioSpan(t *testing.T) {
	bin := everythingBin(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := startSource(t, Config{Name: "everything", Command: bin, Args: []string{"stdio"}, Required: true, TracerProvider: tp})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool")
	if _, err := find(t, s, "everything.echo").Handler(ctx, tools.Call{Arguments: json.RawMessage(`{"message":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var got map[string]string
	for _, sp := range rec.Ended() {
		if sp.Name() == "tools/call echo" {
			got = map[string]string{}
			for _, a := range sp.Attributes() {
				got[string(a.Key)] = a.Value.Emit()
			}
		}
	}
	if _, err := strconv.Atoi(got["jsonrpc.request.id"]); err != nil || got["network.transport"] != "pipe" || got["mcp.protocol.version"] == "" ||
		got["mcp.method.name"] != "tools/call" || got["mcp.session.id"] != "" {
		t.Fatalf("tools/call span attributes %v", got)
	}
}
