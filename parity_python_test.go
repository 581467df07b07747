package ptc_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptcrun/ptc"
	"github.com/ptcrun/ptc/tools/demo"
)

// sharedFactsJS and sharedFactsPy report what the script contract says
// JavaScript and Python share: discovery's answers, a call's result, the
// errors of an unknown tool, and the input — one line per fact, in the
// same JSON.
const sharedFactsJS = `
const lines = [];
lines.push("search " + JSON.stringify((await tools.$search("travel budget by level", 3)).map((h) => h.name)));
lines.push("describe " + JSON.stringify(await tools.$describe("get_budget_by_level")));
try { await tools.$describe("no_such_tool"); } catch (e) { lines.push("describe unknown " + JSON.stringify([e.name, e.code, e.tool])); }
try { await tools.nope({}); } catch (e) { lines.push("unknown tool " + JSON.stringify([e.name, e.code, e.tool])); }
lines.push("call " + JSON.stringify(await tools.get_budget_by_level({level: "senior"})));
lines.push("input " + JSON.stringify(input));
return lines.join("\n");
`

const sharedFactsPy = `
import json
def norm(v):
    # JSON's 3000.0 is Python's float; JavaScript prints it 3000.
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v
def j(v):
    return json.dumps(norm(v), separators=(",", ":"), ensure_ascii=False)
lines = []
lines.append("search " + j([h["name"] for h in await tools.search("travel budget by level", 3)]))
lines.append("describe " + j(await tools.describe("get_budget_by_level")))
try:
    await tools.describe("no_such_tool")
except ToolError as e:
    lines.append("describe unknown " + j([e.name, e.code, e.tool]))
try:
    await tools.nope({})
except ToolError as e:
    lines.append("unknown tool " + j([e.name, e.code, e.tool]))
lines.append("call " + j(await tools.get_budget_by_level(level="senior")))
lines.append("input " + j(input))
return "\n".join(lines)
`

// pythonSurface reports the names a Python script sees: its globals, the
// builtins, the tools object's own names and the asyncio it imports.
const pythonSurface = `
import asyncio, builtins
g = sorted(k for k in globals() if not k.startswith("__"))
return {"globals": g, "builtins": sorted(dir(builtins)), "tools": sorted(n for n in dir(type(tools)) if not n.startswith("__")),
        "asyncio": sorted(n for n in dir(asyncio) if not n.startswith("__"))}
`

// TestParityPython: Python sees what JavaScript sees where the contract
// says so (discovery, calls, tool errors, input), and the same surface in
// every isolation of the Go API.
func TestParityPython(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and compiles the Python interpreter")
	}
	modes := []struct {
		name string
		opts []ptc.Option
	}{
		{"inprocess", nil},
		{"workers", []ptc.Option{ptc.WithIsolation(ptc.Isolation{WorkerProcesses: true, Idle: -1, Max: 1})}},
	}
	input := json.RawMessage(`{"n":[1,"two"],"é":null}`)
	var reports []map[string]string
	for _, m := range modes {
		r, err := ptc.NewRunner(append([]ptc.Option{ptc.WithTools(demo.Tools()...)}, m.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for name, req := range map[string]ptc.Request{
			"js facts":       {Language: ptc.LanguageJavaScript, Source: sharedFactsJS, Input: input},
			"python facts":   {Language: ptc.LanguagePython, Source: sharedFactsPy, Input: input},
			"python surface": {Language: ptc.LanguagePython, Source: pythonSurface},
		} {
			res, err := r.Execute(context.Background(), req)
			if err != nil {
				t.Fatalf("%s/%s: %v", m.name, name, err)
			}
			if res.Error != nil {
				t.Fatalf("%s/%s: %v", m.name, name, res.Error)
			}
			got[name] = string(res.Result)
		}
		reports = append(reports, got)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, got := range reports {
		if got["js facts"] != got["python facts"] {
			t.Errorf("%s: Python's facts differ from JavaScript's:\n%s", modes[i].name, diffLines(got["js facts"], got["python facts"]))
		}
		if got["python surface"] != reports[0]["python surface"] {
			t.Errorf("%s: Python sees another surface than %s:\n%s", modes[i].name, modes[0].name, diffLines(reports[0]["python surface"], got["python surface"]))
		}
	}
	for _, want := range []string{`"ToolError"`, `"gather"`, `"input"`, `"tools"`, `"describe"`, `"search"`} {
		if !strings.Contains(reports[0]["python surface"], want) {
			t.Errorf("the Python surface lacks %s: %s", want, reports[0]["python surface"])
		}
	}
}
