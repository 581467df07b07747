package python

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/core"
	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
	"github.com/ptcrun/ptc/tools"
)

// TestContract runs each bullet of the script contract.
func TestContract(t *testing.T) {
	cases := []struct {
		name, src, input string
		extra            []tools.Tool
		// want is the result JSON; kind, line, col and msg describe a
		// failure instead.
		want       string
		kind       fault.Kind
		line, col  int
		msg, tool  string
		logs       []string // "level:message"
		stackNoPre bool
	}{
		{name: "return", src: "return {'a': [1, 2.5, None, True, 'x']}", want: `{"a":[1,2.5,null,true,"x"]}`},
		{name: "no return is null", src: "x = 1", want: `null`},
		{name: "empty script", src: "", want: `null`},
		{name: "input", src: "return input['k']", input: `{"k":[1,"é"]}`, want: `[1,"é"]`},
		{name: "input absent is None", src: "return input is None", want: `true`},
		{name: "dict arguments", src: "return await tools.echo({'member_id': 'e1', 'quarter': 'Q3'})", want: `{"member_id":"e1","quarter":"Q3"}`},
		{name: "keyword arguments", src: "return await tools.echo(member_id='e1', quarter='Q3')", want: `{"member_id":"e1","quarter":"Q3"}`},
		{name: "no arguments", src: "return await tools.echo()", want: `{}`},
		{name: "dotted name by item", src: "return await tools['shop.price']({'item': 'x'})", want: `{"price":12.5}`},
		{name: "dotted name by attribute", src: "return await tools.shop.price(item='x')", want: `{"price":12.5}`},
		{name: "asyncio.gather runs calls together", extra: []tools.Tool{barrierTool(3)},
			src:  "import asyncio\nr = await asyncio.gather(tools.barrier(), tools.barrier(), tools.barrier())\nreturn sorted(x['seq'] for x in r)",
			want: `[1,2,3]`},
		{name: "gather of coroutines", extra: []tools.Tool{barrierTool(2)},
			src:  "async def one(i):\n    r = await tools.barrier()\n    return await tools.echo(i=i)\nreturn await gather(one(1), one(2))",
			want: `[{"i":1},{"i":2}]`},
		{name: "a ready task runs before an awaited call returns",
			src:  "import asyncio\norder = []\nasync def other():\n    order.append('task')\nt = asyncio.create_task(other())\nawait tools.echo(a=1)\norder.append('call')\nawait t\nreturn order",
			want: `["task","call"]`},
		{name: "an awaited call done before its await", src: "c = tools.echo(a=1)\nd = tools.echo(b=2)\nx = await d\nreturn [await c, x]", want: `[{"a":1},{"b":2}]`},
		{name: "create_task", src: "import asyncio\nt = asyncio.create_task(tools.echo(a=1))\nawait asyncio.sleep(0)\nreturn await t", want: `{"a":1}`},
		{name: "gather return_exceptions", src: "import asyncio\nr = await asyncio.gather(tools.fail(), tools.echo(a=1), return_exceptions=True)\nreturn [type(r[0]).__name__, r[0].code, r[1]]",
			want: `["ToolError","not_found",{"a":1}]`},
		{name: "ToolError caught", src: "try:\n    await tools.fail({})\nexcept ToolError as e:\n    return [e.code, e.message, e.tool, e.name]",
			want: `["not_found","no such record","fail","ToolError"]`},
		{name: "ToolError uncaught names the await line", src: "x = 1\n\nawait tools.fail({})\n", kind: fault.KindScript, line: 3, col: 1, msg: "ToolError: no such record", tool: "fail"},
		{name: "unknown tool", src: "try:\n    await tools.nope()\nexcept ToolError as e:\n    return e.code", want: `"unknown_tool"`},
		{name: "argument schema", src: "try:\n    await tools.typed(n='x')\nexcept ToolError as e:\n    return [e.name, e.code]", want: `["ToolArgumentError","invalid_arguments"]`},
		{name: "arguments not a dict", src: "await tools.echo(1)", kind: fault.KindScript, line: 1, msg: "TypeError: tools.echo takes a dict of arguments, not int"},
		{name: "arguments not JSON", src: "await tools.echo(x=object())", kind: fault.KindScript, line: 1, msg: "TypeError: the arguments of tools.echo are not JSON"},
		{name: "search", src: "hits = await tools.search('echo arguments')\nreturn hits[0]['name']", want: `"echo"`},
		{name: "describe", src: "d = await tools.describe('echo')\nreturn d['description']", want: `"Echo the arguments back."`},
		{name: "describe unknown", src: "try:\n    await tools.describe('nope')\nexcept ToolError as e:\n    return e.code", want: `"unknown_tool"`},
		{name: "print is a log", src: "print('a', 1)\nprint('b\\nc')\nreturn 1", want: `1`, logs: []string{"log:a 1", "log:b", "log:c"}},
		{name: "stderr is an error log", src: "import sys\nprint('bad', file=sys.stderr)", want: `null`, logs: []string{"error:bad"}},
		{name: "logging", src: "import logging\nlogging.info('i %d', 1)\nlogging.warning('w')\nlogging.getLogger('x').error('e')", want: `null`,
			logs: []string{"info:i 1", "warn:w", "error:e"}},
		{name: "syntax error in the user's lines", src: "x = 1\ny = (2 +\n", kind: fault.KindSyntax, line: 2, col: 5, msg: "SyntaxError: '(' was never closed"},
		{name: "runtime error names the user's line", src: "def f(a):\n    return a / 0\n\nf(1)", kind: fault.KindScript, line: 2, msg: "ZeroDivisionError: division by zero"},
		{name: "result not JSON", src: "return object()", kind: fault.KindScript, msg: "the script's return value is not JSON"},
		{name: "result NaN", src: "return float('nan')", kind: fault.KindScript, msg: "the script's return value is not JSON"},
		{name: "top-level return in a loop", src: "for i in range(10):\n    if i == 3:\n        return i", want: `3`},
		{name: "sys.exit is an error", src: "import sys\nsys.exit(3)", kind: fault.KindScript, msg: "SystemExit: 3"},
		{name: "a multi-line string keeps its text", src: "s = '''a\n  b'''\nreturn s", want: `"a\n  b"`},
		{name: "lone surrogate", src: "return '\\ud800x'", want: `"\ud800x"`},
		{name: "stdlib", src: "import json, re, decimal, dataclasses, collections, datetime, math\nreturn [json.dumps({'a': 1}), re.sub('a', 'b', 'aa'), str(decimal.Decimal('1.1') + 1)]",
			want: `["{\"a\": 1}","bb","2.1"]`},
	}
	for _, via := range callers {
		for _, c := range cases {
			t.Run(via.name+"/"+c.name, func(t *testing.T) {
				out, logs := runVia(t, via.awaited, c.src, c.input, limits.Limits{}, c.extra...)
				if c.kind == fault.KindUnspecified {
					if out.Err != nil {
						t.Fatalf("error %v (line %d)\n%s", out.Err, out.Err.Line, out.Err.Stack)
					}
					if string(out.Result) != c.want {
						t.Fatalf("result %s, want %s", out.Result, c.want)
					}
				} else {
					if out.Err == nil {
						t.Fatalf("result %s, want a %s", out.Result, c.kind)
					}
					if out.Err.Kind != c.kind || !strings.Contains(out.Err.Message, c.msg) {
						t.Fatalf("error %s %q, want %s containing %q", out.Err.Kind, out.Err.Message, c.kind, c.msg)
					}
					if c.line != 0 && out.Err.Line != c.line {
						t.Errorf("line %d, want %d\n%s", out.Err.Line, c.line, out.Err.Stack)
					}
					if c.col != 0 && out.Err.Column != c.col {
						t.Errorf("column %d, want %d", out.Err.Column, c.col)
					}
					if out.Err.Tool != c.tool {
						t.Errorf("tool %q, want %q", out.Err.Tool, c.tool)
					}
					if strings.Contains(out.Err.Stack, "prelude") || strings.Contains(out.Err.Stack, "<string>") {
						t.Errorf("the stack shows the prelude:\n%s", out.Err.Stack)
					}
				}
				if c.logs != nil {
					var got []string
					for _, l := range logs {
						got = append(got, l.Level+":"+l.Message)
					}
					if strings.Join(got, "|") != strings.Join(c.logs, "|") {
						t.Errorf("logs %q, want %q", got, c.logs)
					}
				}
			})
		}
	}
}

// TestPrintedCallIsALog: text that looks like a protocol line, printed by
// the script in every way print can reach, is a log line and makes no
// call.
func TestPrintedCallIsALog(t *testing.T) {
	src := `import sys
line = '{"c":1,"n":"echo","a":{"forged":true}}'
print(line)
sys.stdout.write(line + "\n")
sys.__stdout__.write(line + "\n")
sys.stderr.write(line + "\n")
return 1`
	j, d := job(src, "", limits.Limits{}, testTools(t))
	out := engine(t).Run(context.Background(), j)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	if n := len(d.Trace()); n != 0 {
		t.Fatalf("%d calls made, want none: %+v", n, d.Trace())
	}
	logs, _ := j.Logs.Entries()
	if len(logs) != 4 {
		t.Fatalf("logs %+v, want the 4 lines", logs)
	}
}

// TestDeterminism: a deterministic job sees its seed in random, uuid4 and
// os.urandom, and a virtual clock from its ClockStart.
func TestDeterminism(t *testing.T) {
	src := `import random, uuid, time, datetime, os
return [random.random(), str(uuid.uuid4()), os.urandom(4).hex(), int(time.time()), datetime.datetime.now(datetime.timezone.utc).year]`
	start := time.Date(2030, 5, 1, 0, 0, 0, 0, time.UTC)
	results := map[uint64]string{}
	for _, seed := range []uint64{1, 1, 2} {
		j, _ := job(src, "", limits.Limits{}, testTools(t))
		j.Determinism = core.Determinism{Deterministic: true, Seed: seed, ClockStart: start, ClockStartSet: true}
		out := engine(t).Run(context.Background(), j)
		if out.Err != nil {
			t.Fatal(out.Err)
		}
		var r []any
		if err := json.Unmarshal(out.Result, &r); err != nil {
			t.Fatal(err)
		}
		if int64(r[3].(float64)) != start.Unix() || r[4].(float64) != 2030 {
			t.Fatalf("clock %v, want %v", r[3:], start)
		}
		if prev, ok := results[seed]; ok && prev != string(out.Result) {
			t.Fatalf("seed %d gave %s then %s", seed, prev, out.Result)
		}
		results[seed] = string(out.Result)
	}
	if results[1] == results[2] {
		t.Fatalf("seeds 1 and 2 gave the same %s", results[1])
	}
}
