package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/ptcrun/ptc/internal/bridge"
	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/tools"
)

// recorder is a CallObserver that records what it sees and tags each
// call's context.
type recorder struct {
	mu     sync.Mutex
	events []string
}

type tagKey struct{}

func (r *recorder) CallStarted(ctx context.Context, ev *core.CallEvent) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("start #%d %s %s args=%s", ev.Seq, ev.Tool, ev.IdempotencyKey, ev.Arguments))
	return context.WithValue(ctx, tagKey{}, ev.Seq)
}

func (r *recorder) CallFinished(ctx context.Context, ev *core.CallEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tag, _ := ctx.Value(tagKey{}).(int32)
	r.events = append(r.events, fmt.Sprintf("finish #%d %s tag=%d outcome=%s result=%s msg=%q", ev.Seq, ev.Tool, tag, ev.Outcome(), ev.Result, ev.ErrorMessage))
}

// TestObserver: every recorded call is observed, started in call order and
// finished with its outcome; refused calls are observed too (up to
// MaxRefusedRecords past the budget), and the handler runs in the context
// CallStarted returned.
func TestObserver(t *testing.T) {
	rec := &recorder{}
	echoTag := func(ctx context.Context, _ tools.Call) (json.RawMessage, error) {
		return json.Marshal(ctx.Value(tagKey{}))
	}
	d := bridge.New(bridge.Config{ExecutionID: "ex", MaxCalls: 4, Observer: rec, Tools: []*tools.Compiled{
		compile(t, tools.Tool{Definition: tools.Definition{Name: "tag", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}, Handler: echoTag}),
		compile(t, tools.Tool{Definition: tools.Definition{Name: "fail"}, Handler: func(context.Context, tools.Call) (json.RawMessage, error) {
			return nil, tools.Errorf("nope", "no such thing")
		}}),
	}})
	ctx := context.Background()
	if out, err := d.Call(ctx, "tag", json.RawMessage(`{}`)); err != nil || string(out) != "1" {
		t.Fatalf("tag: %s %v", out, err)
	}
	_, _ = d.Call(ctx, "fail", nil)
	_, _ = d.Call(ctx, "tag", json.RawMessage(`{"x":1}`))
	_, _ = d.Call(ctx, "missing", nil)
	for i := 0; i < bridge.MaxRefusedRecords+10; i++ {
		_, _ = d.Call(ctx, "tag", json.RawMessage(`{}`))
	}
	want := []string{
		`start #1 tag ex/1 args={}`,
		`finish #1 tag tag=1 outcome=ok result=1 msg=""`,
		`start #2 fail ex/2 args=`,
		`finish #2 fail tag=2 outcome=nope result= msg="no such thing"`,
		`start #3 tag ex/3 args={"x":1}`,
		`finish #3 tag tag=3 outcome=invalid_arguments result= msg="arguments do not match the input schema of tag: (root): additional properties 'x' not allowed"`,
		`start #4 missing ex/4 args=`,
		`finish #4 missing tag=4 outcome=unknown_tool result= msg="unknown tool \"missing\"; available tools: fail, tag"`,
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := rec.events
	if len(got) != len(want)+2*bridge.MaxRefusedRecords {
		t.Fatalf("%d events, want %d: %q", len(got), len(want)+2*bridge.MaxRefusedRecords, got)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	if last := got[len(got)-1]; last != fmt.Sprintf("finish #%d tag tag=%d outcome=tool_call_limit result= msg=\"tool call limit of 4 calls reached; make fewer calls (batch work, or stop earlier)\"", 4+bridge.MaxRefusedRecords, 4+bridge.MaxRefusedRecords) {
		t.Errorf("last event %s", last)
	}
}
