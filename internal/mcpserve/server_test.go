package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/mcpserve"
	"github.com/ptcrun/ptc/tools"
)

// changingBackend is a fakeBackend whose tools can change.
type changingBackend struct {
	mu   sync.Mutex
	defs []tools.Definition
}

func (c *changingBackend) set(defs ...tools.Definition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.defs = defs
}

func (c *changingBackend) Tools(context.Context, core.ToolQuery) (*core.ToolList, *fault.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &core.ToolList{Tools: c.defs}, nil
}

func (c *changingBackend) Run(context.Context, core.Request) (*core.Result, *fault.Error) {
	return &core.Result{Result: json.RawMessage(`1`)}, nil
}

// TestRefresh: when the backend's tools change, Refresh updates the
// descriptions and tells the sessions.
func TestRefresh(t *testing.T) {
	b := &changingBackend{}
	b.set(tools.Definition{Name: "crm.find", Description: "Find a customer."})
	s := mcpserve.New(mcpserve.Config{Backend: b})
	changed := make(chan struct{}, 8)
	cs := connect(t, s, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	desc := func() string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tools[0].Description
	}
	if d := desc(); !strings.Contains(d, "find(args?: Record<string, unknown>)") || strings.Contains(d, "update") {
		t.Fatalf("before:\n%s", d)
	}
	b.set(tools.Definition{Name: "crm.find", Description: "Find a customer."}, tools.Definition{Name: "crm.update", Description: "Update a customer."})
	s.Refresh()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if d := desc(); !strings.Contains(d, "update(args?: Record<string, unknown>)") || !strings.Contains(d, "The 2 tools") {
		t.Fatalf("after:\n%s", d)
	}
}

// blockingBackend runs executions that wait for release.
type blockingBackend struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingBackend) Tools(context.Context, core.ToolQuery) (*core.ToolList, *fault.Error) {
	return &core.ToolList{}, nil
}

func (b *blockingBackend) Run(context.Context, core.Request) (*core.Result, *fault.Error) {
	b.entered <- struct{}{}
	<-b.release
	return &core.Result{Result: json.RawMessage(`"done"`)}, nil
}

// TestDrain: Drain refuses new executions and returns when the running
// ones have ended (or its context has).
func TestDrain(t *testing.T) {
	b := &blockingBackend{entered: make(chan struct{}, 1), release: make(chan struct{})}
	s := mcpserve.New(mcpserve.Config{Backend: b})
	cs := connect(t, s, nil)
	first := make(chan *sdk.CallToolResult, 1)
	// The caller goroutine ends when the blocked execution is released.
	go func() {
		res, _ := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "execute", Arguments: map[string]any{"code": "x"}})
		first <- res
	}()
	<-b.entered
	if s.Running() != 1 {
		t.Fatalf("running %d", s.Running())
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Drain(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("drain with an ended context: %v", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	res := call(t, cs, "execute", codeArgs("return 1"))
	if !res.IsError || !strings.Contains(text(res), "shutting down") {
		t.Fatalf("while draining: %s", text(res))
	}
	select {
	case err := <-drained:
		t.Fatalf("drained while an execution runs: %v", err)
	default:
	}
	close(b.release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if res := <-first; res == nil || text(res) != `"done"` {
		t.Fatalf("the running execution: %+v", res)
	}
}

// flakyBackend cannot list its tools until up is set (a remote ptcd that
// is down when the MCP server starts).
type flakyBackend struct {
	changingBackend
	up atomic.Bool
}

func (f *flakyBackend) Tools(ctx context.Context, q core.ToolQuery) (*core.ToolList, *fault.Error) {
	if !f.up.Load() {
		return nil, fault.Reject(fault.CodeUnavailable, "connection refused")
	}
	return f.changingBackend.Tools(ctx, q)
}

// TestToolsUnavailableAtStart: descriptions made while the backend could
// not list the tools say so, and the next call makes them again.
func TestToolsUnavailableAtStart(t *testing.T) {
	b := &flakyBackend{}
	b.set(tools.Definition{Name: "crm.find", Description: "Find a customer."})
	s := mcpserve.New(mcpserve.Config{Backend: b})
	changed := make(chan struct{}, 8)
	cs := connect(t, s, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	desc := func() string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tools[0].Description
	}
	if d := desc(); !strings.Contains(d, "tool list is unavailable right now") || !strings.Contains(d, "body of an async function") {
		t.Fatalf("while down:\n%s", d)
	}
	b.up.Store(true)
	if res := call(t, cs, "execute", codeArgs("return 1")); res.IsError {
		t.Fatal(text(res))
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	if d := desc(); !strings.Contains(d, "The one tool") {
		t.Fatalf("after:\n%s", d)
	}
}
