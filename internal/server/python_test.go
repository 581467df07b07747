package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
	"github.com/ptcrun/ptc/tools"
)

// TestPythonOverGRPC runs examples/expenses.py through Execute, a Python
// script with a client tool through Session, and asks ListTools for the
// Python prompt.
func TestPythonOverGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the Python interpreter")
	}
	f := start(t)
	ctx := context.Background()
	t.Run("Execute", func(t *testing.T) {
		src, err := os.ReadFile("../../examples/expenses.py")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile("../../examples/expenses.expected.json")
		res, err := f.rpc.Execute(ctx, &ptcv1.ExecuteRequest{Script: &ptcv1.Script{Language: ptcv1.Language_LANGUAGE_PYTHON, Source: string(src)}})
		if err != nil {
			t.Fatal(err)
		}
		if res.GetError() != nil {
			t.Fatal(res.GetError())
		}
		var g, w any
		_ = json.Unmarshal([]byte(res.GetResultJson()), &g)
		_ = json.Unmarshal(want, &w)
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Fatalf("result %s", res.GetResultJson())
		}
		if res.GetStats().GetToolCalls() != 26 || len(res.GetTrace()) != 26 || len(res.GetLogs()) != 1 {
			t.Fatalf("stats %v, %d log entries", res.GetStats(), len(res.GetLogs()))
		}
	})
	t.Run("Session with a client tool", func(t *testing.T) {
		double := clientTool("crm.double", `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"],"additionalProperties":false}`,
			func(_ context.Context, c tools.Call) (json.RawMessage, error) {
				var in struct{ N float64 }
				_ = json.Unmarshal(c.Arguments, &in)
				return json.Marshal(in.N * 2)
			})
		res, err := f.client.Run(ctx, ptc.Request{Language: ptc.LanguagePython, Source: `b = await tools.get_budget_by_level(level="mid")
d = await tools["crm.double"](n=b["travel_limit"])
try:
    await tools.crm.double(n="x")
except ToolError as e:
    return {"d": d, "code": e.code}`}, double)
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil || string(res.Result) != `{"d":4000,"code":"invalid_arguments"}` {
			t.Fatalf("result %s %v", res.Result, res.Error)
		}
	})
	t.Run("ListTools prompt", func(t *testing.T) {
		res, err := f.rpc.ListTools(ctx, &ptcv1.ListToolsRequest{Language: ptcv1.Language_LANGUAGE_PYTHON})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.GetPrompt(), "Python 3.12") || strings.Contains(res.GetPrompt(), "Promise.all") {
			t.Fatalf("prompt %q", res.GetPrompt())
		}
	})
}
