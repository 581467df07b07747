package python

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ptcrun/ptc/internal/fault"
	"github.com/ptcrun/ptc/internal/limits"
)

// TestHostile runs scripts that try to get out of the sandbox or to take
// the host down: each ends classified, within its limits.
func TestHostile(t *testing.T) {
	// The CPU limit, not the wall clock, ends the scripts that never stop:
	// on a loaded host the interpreter may take seconds of wall time to
	// start.
	lim := limits.Limits{CPUTime: 3 * time.Second, Timeout: 2 * time.Minute, MemoryBytes: 64 << 20}
	cases := []struct {
		name string
		src  string
		// kinds are the acceptable outcomes; msg, when set, is part of the
		// message.
		kinds []fault.Kind
		msg   string
		lim   *limits.Limits
	}{
		{name: "coroutine fork bomb", src: "async def f():\n    await gather(f(), f())\nawait f()",
			kinds: []fault.Kind{fault.KindCPULimit, fault.KindMemoryLimit, fault.KindScript}},
		{name: "task fork bomb", src: "import asyncio\nasync def f():\n    asyncio.create_task(f())\n    asyncio.create_task(f())\n    await asyncio.sleep(0)\nawait f()\nwhile True:\n    await asyncio.sleep(0)",
			kinds: []fault.Kind{fault.KindCPULimit, fault.KindMemoryLimit, fault.KindScript}},
		{name: "huge int", src: "x = 10**(10**8)", kinds: []fault.Kind{fault.KindCPULimit, fault.KindMemoryLimit}},
		{name: "huge int to text", src: "return str(10**5000)", kinds: []fault.Kind{fault.KindScript}, msg: "integer string conversion"},
		{name: "deep recursion", src: "def f(n):\n    return f(n + 1)\nf(0)", kinds: []fault.Kind{fault.KindScript}, msg: "RecursionError"},
		{name: "recursion limit raised", src: "import sys\nsys.setrecursionlimit(10**6)\ndef f(n):\n    return f(n + 1)\nf(0)",
			kinds: []fault.Kind{fault.KindCPULimit, fault.KindMemoryLimit, fault.KindScript}},
		{name: "host file", src: "open('/etc/passwd').read()", kinds: []fault.Kind{fault.KindScript}, msg: "FileNotFoundError"},
		{name: "host root", src: "import os\nos.listdir('/')", kinds: []fault.Kind{fault.KindScript}, msg: "FileNotFoundError"},
		{name: "socket", src: "import socket\nsocket.socket().connect(('127.0.0.1', 80))", kinds: []fault.Kind{fault.KindScript}, msg: "OSError"},
		{name: "os.system", src: "import os\nos.system('ls')", kinds: []fault.Kind{fault.KindScript}, msg: "has no attribute 'system'"},
		{name: "subprocess", src: "import subprocess\nsubprocess.run(['ls'])", kinds: []fault.Kind{fault.KindScript}, msg: "does not support processes"},
		{name: "ctypes", src: "__import__('ctypes')", kinds: []fault.Kind{fault.KindScript}, msg: "No module named 'ctypes'"},
		{name: "threads", src: "import threading\nthreading.Thread(target=print).start()", kinds: []fault.Kind{fault.KindScript}, msg: "can't start new thread"},
		{name: "protocol line written to fd 1", src: "import os\nos.write(1, b'hello\\n')", kinds: []fault.Kind{fault.KindScript}, msg: "file descriptor 1"},
		{name: "protocol stdin read", src: "import os\nreturn os.read(0, 10)", kinds: []fault.Kind{fault.KindTimeout}, lim: &limits.Limits{Timeout: time.Second}},
		{name: "sys.exit", src: "raise SystemExit(0)", kinds: []fault.Kind{fault.KindScript}, msg: "SystemExit"},
		{name: "sys.stdout deleted, then a failure", src: "import sys\ndel sys.stdout\nraise ValueError('boom')", kinds: []fault.Kind{fault.KindScript}, msg: "ValueError: boom"},
		{name: "standard streams closed", src: "import os\nos.close(0)\nos.close(1)\nos.close(2)\nreturn 8", kinds: []fault.Kind{fault.KindScript}, msg: "ended the interpreter"},
		{name: "result nested too deeply", src: "x = []\nfor i in range(100000):\n    x = [x]\nreturn x", kinds: []fault.Kind{fault.KindScript}, msg: "return value is not JSON"},
		{name: "result line forged before the result", src: "import os\nos.write(1, b'{\"r\": 42}\\n')\nreturn 7", kinds: []fault.Kind{fault.KindScript}, msg: "file descriptor 1"},
		{name: "failure line forged before the result", src: "import os\nos.write(1, b'{\"e\": {\"type\": \"MemoryError\"}}\\n')\nreturn 7", kinds: []fault.Kind{fault.KindScript}, msg: "file descriptor 1"},
		{name: "os._exit", src: "import os\nos._exit(0)", kinds: []fault.Kind{fault.KindScript}, msg: "ended the interpreter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := lim
			if c.lim != nil {
				l = *c.lim
			}
			out, _ := run(t, c.src, "", l)
			if out.Err == nil {
				t.Fatalf("result %s, want one of %v", out.Result, c.kinds)
			}
			ok := false
			for _, k := range c.kinds {
				ok = ok || out.Err.Kind == k
			}
			if !ok || !strings.Contains(out.Err.Message, c.msg) {
				t.Fatalf("error %v, want one of %v containing %q", out.Err, c.kinds, c.msg)
			}
		})
	}
}

// TestInterpreterFilesStayPut: the standard library can be read; a script
// that writes to it changes only its own instance's memory, never the
// next execution's view.
func TestInterpreterFilesStayPut(t *testing.T) {
	write := "import os\ntry:\n    with open(os.__file__, 'w') as f:\n        f.write('raise SystemExit(9)')\nexcept OSError:\n    pass\nreturn 1"
	read := "import os\nwith open(os.__file__) as f:\n    return 'def ' in f.read()"
	for i, src := range []string{read, write, read} {
		j, _ := job(src, "", limits.Limits{}, testTools(t))
		out := engine(t).Run(context.Background(), j)
		if out.Err != nil {
			t.Fatalf("run %d: %v", i, out.Err)
		}
		if i != 1 && string(out.Result) != "true" {
			t.Fatalf("run %d: the standard library reads %s", i, out.Result)
		}
	}
}

// TestStreamsReplaced: a script that replaces or removes sys.stdout and
// sys.stderr still returns its result (the prelude keeps its own
// references), and what it prints into its replacement stays there.
func TestStreamsReplaced(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"StringIO and None", "import sys, io\nsys.stdout = io.StringIO()\nsys.stderr = None\nprint('hidden')\nreturn 9", "9"},
		{"deleted", "import sys\ndel sys.stdout, sys.stderr\nreturn 'ok'", `"ok"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, logs := run(t, c.src, "", limits.Limits{})
			if out.Err != nil || string(out.Result) != c.want {
				t.Fatalf("outcome %s %v, want %s", out.Result, out.Err, c.want)
			}
			for _, l := range logs {
				if strings.Contains(l.Message, "hidden") {
					t.Fatalf("logs %+v hold what the script printed into its own stream", logs)
				}
			}
		})
	}
}
