package executor

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestOnToolCall: the request's hook hears of each call of the script as
// it starts and as it ends.
func TestOnToolCall(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Tool{Definition: tools.Definition{Name: "n"},
		Handler: func(context.Context, tools.Call) (json.RawMessage, error) { return json.RawMessage(`2`), nil }}); err != nil {
		t.Fatal(err)
	}
	e := newExecutor(t, Config{Registry: reg})
	var mu sync.Mutex
	var starts, ends int
	req := core.Request{Script: core.Script{Source: `return (await tools.n()) + (await tools.n())`},
		OnToolCall: func(rec core.Record, done bool) {
			mu.Lock()
			defer mu.Unlock()
			if done {
				ends++
			} else {
				starts++
			}
		}}
	res, err := e.Execute(context.Background(), req, limits.Limits{})
	if err != nil || res.Error != nil || string(res.Result) != "4" {
		t.Fatal(err, res)
	}
	if starts != 2 || ends != 2 {
		t.Fatalf("starts %d ends %d", starts, ends)
	}
}
