package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	ptcv1 "github.com/ptcrun/ptc/proto/ptc/v1"
)

// famPython: hostile Python scripts against ptcd's default configuration,
// where Python runs in the worker processes (each compiles the
// interpreter once, one worker at a time).
const famPython family = "python"

// pythonInterpreterPath is the pinned interpreter that `npm ci` installs
// in node_modules of the checkout, found from the test's directory
// upwards; empty when it is absent. ptcd is started with it
// (PTC_PYTHON_INTERPRETER): its working directory and home are
// temporary.
var pythonInterpreterPath = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for ; ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "node_modules", "@antonz", "python-wasi", "dist", "python.wasm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
})

// pyReq is a Python request.
func pyReq(src string, opts ...opt) *ptcv1.ExecuteRequest {
	return build(ptcv1.Language_LANGUAGE_PYTHON, src, opts)
}

// pyDo sends r once the interpreter is known to be there: without it the
// case is skipped, except in CI, where it fails.
func pyDo(r *ptcv1.ExecuteRequest) func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
	return func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
		if pythonInterpreterPath() == "" {
			if os.Getenv("CI") == "true" {
				return nil, fmt.Errorf("no Python interpreter in node_modules: run npm ci")
			}
			e.skip("no Python interpreter in node_modules (npm ci installs it)")
			return nil, nil
		}
		return e.c.Execute(ctx, r)
	}
}

// pythonCases: bombs, floods, protocol forgery and escapes written in
// Python. Each ends with its classified error within its bound, ptcd's
// memory stays put, and a Python request (next) succeeds afterwards on
// the same server — after a worker was stopped, on its successor, which
// compiles the interpreter again. The bounds leave room for that compile
// (seconds on a loaded machine).
func pythonCases() []tcase {
	const bound = 90 * time.Second
	py := func(name, src string, w want, opts ...opt) tcase {
		opts = append([]opt{cpu(2 * time.Second), timeout(60 * time.Second), memory(64 * MiB)}, opts...)
		return tcase{name: name, family: famPython, modes: worker, bound: bound,
			serverGrowth: 96 * MiB, serverSettle: 48 * MiB,
			do: pyDo(pyReq(src, opts...)), want: w,
			next: pyReq("return 40 + 2"), nextWant: succeeds("42")}
	}
	k := ptcv1.ErrorKind_ERROR_KIND_SCRIPT_ERROR
	return []tcase{
		// The first Python request loads the interpreter (26 MB) into
		// ptcd, which keeps it to send each new worker: a one-time cost,
		// after which the cases below bound ptcd's growth.
		{name: "python-interpreter-loaded-once", family: famPython, modes: worker, bound: bound, serverGrowth: 160 * MiB, fast: true,
			do: pyDo(pyReq("return 1")), want: succeeds("1")},
		{name: "python-and-javascript-concurrently", family: famPython, modes: worker, bound: bound,
			serverGrowth: 96 * MiB, serverSettle: 48 * MiB, do: mixedPythonJS(3), want: checkedByDo,
			next: pyReq("return 40 + 2"), nextWant: succeeds("42")},
		py("python-busy-loop", "while True:\n    pass", fails(ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT)),
		py("python-huge-int", "x = 10**10**8\nreturn 1", fails(ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT, ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT)),
		py("python-memory-growth", "l = []\nwhile True:\n    l.append(bytearray(10**7))", fails(ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT)),
		py("python-recursion-limit-raised", "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1) + 1\nreturn f(0)",
			fails(ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT, ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT, k)),
		py("python-gather-million-coroutines", "import asyncio\nasync def c():\n    return 1\nr = await asyncio.gather(*(c() for _ in range(10**6)))\nreturn len(r)",
			fails(ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT, ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT)),
		py("python-tool-call-flood", "import asyncio\nr = await asyncio.gather(*(tools.get_budget_by_level(level='junior') for _ in range(5000)))\nreturn len(r)",
			fails(ptcv1.ErrorKind_ERROR_KIND_TOOL_CALL_LIMIT), maxCalls(200)),
		py("python-print-flood", "while True:\n    print('x' * 1000)", fails(ptcv1.ErrorKind_ERROR_KIND_CPU_LIMIT)),
		py("python-forged-result-line", "import os\nprint('{\"r\": 1}')\nos.write(1, b'{\"r\": 42}\\n')\nreturn 7", fails(k)),
		py("python-forged-failure-line", "import os\nos.write(1, b'{\"e\": {\"type\": \"MemoryError\"}}\\n')\nreturn 7", fails(k)),
		py("python-streams-replaced", "import sys, io\nsys.stdout = io.StringIO()\nsys.stderr = None\nprint('hidden')\nreturn 9", succeeds("9")),
		py("python-streams-closed", "import os\nos.close(0)\nos.close(1)\nos.close(2)\nreturn 8", fails(k)),
		py("python-host-files", "import os\nreturn [open('/etc/passwd').read(), os.listdir('/')]", fails(k)),
		py("python-result-too-deep", "x = []\nfor i in range(100000):\n    x = [x]\nreturn x", fails(k)),
		py("python-result-huge", "return 'x' * (100 * 1024 * 1024)", fails(ptcv1.ErrorKind_ERROR_KIND_MEMORY_LIMIT, ptcv1.ErrorKind_ERROR_KIND_OUTPUT_LIMIT)),
	}
}

// mixedPythonJS sends n Python and n JavaScript requests at once, each
// with tool calls: every one must succeed (the Python ones wait while
// workers compile the interpreter, one at a time).
func mixedPythonJS(n int) func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
	return func(ctx context.Context, e *env) (*ptcv1.ExecuteResponse, error) {
		if _, err := pyDo(pyReq("return 0"))(ctx, e); err != nil || e.skipped != "" {
			if err != nil {
				e.fail("the first Python request: %v", err)
			}
			return nil, nil
		}
		reqs := make([]*ptcv1.ExecuteRequest, 0, 2*n)
		for range n {
			reqs = append(reqs,
				pyReq("import asyncio\nr = await asyncio.gather(*(tools.get_budget_by_level(level='junior') for _ in range(20)))\nreturn len(r)"),
				jsReq(`const r = await Promise.all(Array.from({length: 20}, () => tools.get_budget_by_level({level: "junior"}))); return r.length`))
		}
		var wg sync.WaitGroup
		failed := make([]string, len(reqs))
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := e.c.Execute(ctx, r)
				if err != nil || res.GetError() != nil || res.GetResultJson() != "20" {
					failed[i] = fmt.Sprintf("request %d (%s): %s", i, r.GetScript().GetLanguage(), describe(res, err))
				}
			}()
		}
		wg.Wait()
		for _, f := range failed {
			if f != "" {
				e.fail("%s", f)
			}
		}
		return nil, nil
	}
}
