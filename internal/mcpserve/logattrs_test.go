package mcpserve

import (
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallRecordDuration checks that a call's log record gives its
// duration as mcp.time_ms, a number of milliseconds, as gRPC records give
// grpc.time_ms.
func TestCallRecordDuration(t *testing.T) {
	cs := &callerServer{caller: Caller{Key: "tenant"}}
	start := time.Now().Add(-1500 * time.Millisecond)
	for _, a := range logAttrs(cs, &sdk.CallToolRequest{}, "execute", "ok", "", start) {
		if a.Key != "mcp.time_ms" {
			continue
		}
		if ms := a.Value.Float64(); ms < 1500 || ms > 60_000 {
			t.Fatalf("mcp.time_ms = %v, want about 1500", ms)
		}
		return
	}
	t.Fatal("no mcp.time_ms attribute")
}
