package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/mcpserve"
)

// progressClient connects a client that collects progress notifications.
func progressClient(t *testing.T, s *mcpserve.Server) (*sdk.ClientSession, <-chan *sdk.ProgressNotificationParams) {
	events := make(chan *sdk.ProgressNotificationParams, 1024)
	cs := connect(t, s, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		events <- r.Params
	}})
	return cs, events
}

// receive reads n notifications; the timeout only guards a test that
// would otherwise hang.
func receive(t *testing.T, events <-chan *sdk.ProgressNotificationParams, n int) []*sdk.ProgressNotificationParams {
	t.Helper()
	var out []*sdk.ProgressNotificationParams
	for len(out) < n {
		select {
		case e := <-events:
			out = append(out, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d notifications, want %d: %+v", len(out), n, out)
		}
	}
	return out
}

// TestProgress: with a progress token, each tool call is reported when it
// starts and when it ends, progress increasing; without one, nothing.
func TestProgress(t *testing.T) {
	cs, events := progressClient(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}))
	params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `
const team = await tools.get_team_members({department: "engineering"});
try { await tools.get_expenses({member_id: "nobody", quarter: "Q3"}) } catch (e) {}
return team.length`}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError || text(res) != "20" {
		t.Fatal(err, text(res))
	}
	got := receive(t, events, 4)
	want := []string{"call 1 get_team_members: started", "call 1 get_team_members: ok in", "call 2 get_expenses: started", "call 2 get_expenses: failed (not_found)"}
	for i, e := range got {
		if e.ProgressToken != "tok-1" || e.Progress != float64(i+1) || !strings.HasPrefix(e.Message, want[i]) {
			t.Errorf("notification %d: %+v, want %q", i, e, want[i])
		}
	}

	// No token, no notifications: the next ones belong to the next call.
	if res := call(t, cs, "execute", codeArgs(`return await tools.get_budget_by_level({level: "mid"})`)); res.IsError {
		t.Fatal(text(res))
	}
	params = &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": `return 1`}}
	params.SetProgressToken(7)
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-events:
		t.Fatalf("unexpected notification %+v", e)
	default:
	}
}

// TestProgressFlood: a program that makes many calls at once never waits
// for the client; notifications past the queue are dropped, progress still
// increases, and a summary ends the report.
func TestProgressFlood(t *testing.T) {
	cs, events := progressClient(t, mcpserve.New(mcpserve.Config{Backend: newBackend(t)}))
	const calls = 300
	params := &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": fmt.Sprintf(`
const ps = [];
for (let i = 0; i < %d; i++) ps.push(tools.get_budget_by_level({level: "mid"}));
return (await Promise.all(ps)).length`, calls)}}
	params.SetProgressToken("flood")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || text(res) != fmt.Sprint(calls) {
		t.Fatal(err, text(res))
	}
	var got []*sdk.ProgressNotificationParams
	for {
		e := receive(t, events, 1)[0]
		got = append(got, e)
		if len(got) == 2*calls || strings.Contains(e.Message, "tool calls started") {
			break
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Progress <= got[i-1].Progress {
			t.Fatalf("progress does not increase at %d: %v then %v", i, got[i-1].Progress, got[i].Progress)
		}
	}
	last := got[len(got)-1].Message
	if len(got) < 2*calls && last != fmt.Sprintf("%d tool calls started, %d finished", calls, calls) {
		t.Fatalf("%d notifications ending with %q", len(got), last)
	}
	raw, _ := json.Marshal(got[len(got)-1])
	t.Logf("%d notifications for %d calls; the last: %s", len(got), calls, raw)
}
