package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/ptcrun/ptc/internal/executor"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/internal/server"
	"github.com/ptcrun/ptc/internal/testenv"
	"github.com/ptcrun/ptc/tools"
	"github.com/ptcrun/ptc/tools/demo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(testenv.SkipReport(m)) }

// newBackend returns ptc's server over an in-process executor holding the
// demo tools and ts.
func newBackend(tb testing.TB, ts ...tools.Tool) *server.Server {
	tb.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(demo.Tools()...); err != nil {
		tb.Fatal(err)
	}
	for _, t := range ts {
		if err := reg.Register(t); err != nil {
			tb.Fatal(err)
		}
	}
	ex, err := executor.New(executor.Config{Registry: reg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ex.Close() })
	return server.New(ex)
}

// connect serves s over an in-memory transport and returns a client
// session, closed (and the server's goroutine waited for) at the end of
// the test.
func connect(tb testing.TB, s *mcpserve.Server, opts *sdk.ClientOptions) *sdk.ClientSession {
	tb.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The server goroutine ends when the client closes the session or
	// ctx is cancelled.
	go func() { done <- s.Run(ctx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		<-done
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// call calls a tool with arguments given as JSON.
func call(tb testing.TB, cs *sdk.ClientSession, tool, args string) *sdk.CallToolResult {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		tb.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// text is a result's text content.
func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// structured re-encodes a result's structuredContent.
func structured(tb testing.TB, res *sdk.CallToolResult) map[string]json.RawMessage {
	tb.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		tb.Fatal(err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("structuredContent %s: %v", raw, err)
	}
	return out
}

// example reads an example script and its expected result (compacted).
func example(tb testing.TB) (script, want string) {
	tb.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.js"))
	if err != nil {
		tb.Fatal(err)
	}
	exp, err := os.ReadFile(filepath.Join("..", "..", "examples", "expenses.expected.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, exp); err != nil {
		tb.Fatal(err)
	}
	return string(src), b.String()
}

// codeArgs returns execute's arguments for a program.
func codeArgs(code string) string {
	b, _ := json.Marshal(map[string]string{"code": code})
	return string(b)
}
