# ptc's Python prelude: runs the script's body as the body of an async
# function and speaks to the host over the interpreter's standard streams.
#
# fd 0 (host -> prelude): the job, one line of JSON {"src", "input",
#   "names", "seed"}; then frames that complete calls: four bytes of length
#   (little-endian), then a tuple in marshal's format, (0, id, value),
#   (1, id, JSON text as bytes) or (2, id, {name, tool, code, message,
#   errors}) (see marshal.go): marshal.loads makes objects several times
#   faster than the JSON scanner in this interpreter.
# fd 1 (prelude -> host): one JSON object a line: a call {"c", "n", "a"},
#   a search {"s", "q", "k"}, a describe {"d", "n"}, a log line {"l", "m"},
#   the result {"r"} or the failure {"e"}.
#
# The script's own sys.stdout and sys.stderr are log streams: nothing it
# prints reaches fd 1. Only what the host imports here is imported before
# the script runs (the interpreter starts in about 0.1 s; `json` would add
# as much again, `asyncio` ten times that), so JSON goes through _json's C
# scanner and encoder and `asyncio` is a small module of this prelude.
import sys, _json, _ast, marshal
from _collections import deque

_posix = sys.modules.get("posix") or __import__("posix")
_write_fd, _read_fd = _posix.write, _posix.read


def _bad_constant(name):
    raise ValueError("invalid JSON constant " + name)


class _Ctx:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_bad_constant)

    def __init__(self):
        self.memo = {}


_scan = _json.make_scanner(_Ctx())


def _loads(s):
    v, end = _scan(s, 0)
    return v


def _not_json(o):
    raise TypeError("a value of type %s is not JSON-serialisable" % type(o).__name__)


# Strings keep their characters (as JavaScript's JSON.stringify does); a
# lone surrogate, which UTF-8 cannot carry, leaves as its \u escape.
_encode = _json.make_encoder({}, _not_json, _json.encode_basestring, None, ":", ",", False, False, False)


def _dumps(v):
    return "".join(_encode(v, 0))


def _send(obj):
    _send_text(_dumps(obj))


def _send_text(text):
    b = (text + "\n").encode("utf-8", "backslashreplace")
    n = _write_fd(1, b)
    while n < len(b):
        b = b[n:]
        n = _write_fd(1, b)


# What the boot program read past the prelude's code.
_inbuf = [globals().pop("_leftover", b"")]


def _more(buf, n):
    chunk = _read_fd(0, n)
    if not chunk:
        # The host ended the execution (its deadline, a limit, a cancel).
        _posix._exit(0)
    return buf + chunk


def _recv_job():
    buf = _inbuf[0]
    while True:
        i = buf.find(b"\n")
        if i >= 0:
            _inbuf[0] = buf[i + 1:]
            return _loads(buf[:i].decode())
        buf = _more(buf, 1 << 16)


_from_bytes = int.from_bytes
_mloads = marshal.loads


def _recv():
    buf = _inbuf[0]
    while len(buf) < 4:
        buf = _more(buf, 1 << 12)
    n = 4 + _from_bytes(buf[:4], "little")
    while len(buf) < n:
        # A small read for a small frame: the interpreter allocates what
        # it asks for.
        buf = _more(buf, max(n - len(buf), 1 << 12))
    _inbuf[0] = buf[n:]
    return _mloads(buf[4:n])


# Logs: print() and sys.stderr become log lines; logging gets a handler.
class _LogStream:
    encoding = "utf-8"
    errors = "strict"

    def __init__(self, level):
        self.level = level
        self.pending = ""

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        s = self.pending + s
        lines = s.split("\n")
        self.pending = lines.pop()
        for line in lines:
            _send({"l": self.level, "m": line})
        if len(self.pending) > 65536:
            _send({"l": self.level, "m": self.pending})
            self.pending = ""
        return len(s)

    def flush(self):
        if self.pending:
            _send({"l": self.level, "m": self.pending})
            self.pending = ""

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False

    def fileno(self):
        raise OSError("the script's output is a log stream, not a file")


class _NoInput:
    def read(self, *a):
        return ""

    readline = read

    def readlines(self, *a):
        return []

    def isatty(self):
        return False

    def fileno(self):
        raise OSError("the script has no standard input; use `input`")


sys.stdout = sys.__stdout__ = _LogStream("log")
sys.stderr = sys.__stderr__ = _LogStream("error")
sys.stdin = sys.__stdin__ = _NoInput()
# The prelude's own references: a script may replace or delete sys.stdout
# and sys.stderr (sys.stdout = None), which must not break the report.
_streams = (sys.stdout, sys.stderr)


def _flush():
    for s in _streams:
        s.flush()


def _setup_logging():
    import logging

    levels = {"DEBUG": "debug", "INFO": "info", "WARNING": "warn", "ERROR": "error", "CRITICAL": "error"}

    class Handler(logging.Handler):
        def emit(self, record):
            try:
                msg = self.format(record)
            except Exception:
                msg = str(record.msg)
            _send({"l": levels.get(record.levelname, "log"), "m": msg})

    root = logging.getLogger()
    h = Handler()
    h.setFormatter(logging.Formatter("%(message)s"))
    root.handlers[:] = [h]
    root.setLevel(logging.INFO)


# Tool calls and the little scheduler that runs the script's tasks.
class ToolError(Exception):
    """A failed tool call: .code and .message as in JavaScript, .tool the
    tool's name, .name ToolError, ToolArgumentError or ToolCallLimitError."""

    def __init__(self, message, code="tool_failed", tool="", name="ToolError", errors=None):
        Exception.__init__(self, message)
        self.message = message
        self.code = code
        self.tool = tool
        self.name = name
        self.errors = errors

    def __str__(self):
        return "%s (tool %r, code %s)" % (self.message, self.tool, self.code)


# _ready holds the tasks that can run (not the one running), in order.
_ready = deque()
_pending = {}
_next_id = [0]
_YIELD = object()


class _Call:
    # Class defaults: making a call runs no Python code of its own.
    done = False
    value = None
    error = None
    waiters = None

    def __await__(self):
        if not self.done:
            # With no task ready to run, nothing happens before the next
            # completion: take completions here, and go on at once if this
            # one is among them, without a trip through the scheduler.
            while not _ready and _pending:
                _complete(_recv())
                if self.done:
                    break
            else:
                yield self
        if self.error is not None:
            raise self.error
        return self.value

    def _settle(self, value, error):
        self.done, self.value, self.error = True, value, error
        if self.waiters:
            _ready.extend(self.waiters)
        self.waiters = None


class _Task(_Call):
    def __init__(self, coro):
        self.coro = coro
        _ready.append(self)

    def _step(self):
        try:
            y = self.coro.send(None)
        except StopIteration as s:
            self._settle(s.value, None)
            return
        except BaseException as e:
            self._settle(None, e)
            return
        if y is _YIELD:
            _ready.append(self)
        elif isinstance(y, _Call):
            if y.done:
                _ready.append(self)
            elif y.waiters is None:
                y.waiters = [self]
            else:
                y.waiters.append(self)
        else:
            self.coro.close()
            self._settle(None, RuntimeError(
                "the script awaited %r, which ptc cannot wait for: await tool calls, "
                "asyncio.gather, asyncio.sleep and your own coroutines" % (y,)))

    def result(self):
        if self.error is not None:
            raise self.error
        return self.value


def _start(kind, rest):
    _next_id[0] += 1
    cid = _next_id[0]
    c = _Call()
    _pending[cid] = c
    _send_text('{"%s":%d,%s}' % (kind, cid, rest))
    return c


def _complete(msg):
    tag, cid, v = msg
    c = _pending.pop(cid, None)
    if c is None:
        return
    if tag == 0:
        # _settle, inlined for the common case.
        c.done = True
        c.value = v
        if c.waiters:
            _ready.extend(c.waiters)
    elif tag == 1:
        c._settle(_loads(v.decode()), None)
    else:
        c._settle(None, ToolError(v.get("message", ""), v.get("code", ""), v.get("tool", ""),
                                  v.get("name", "ToolError"), v.get("errors")))


def _run(coro):
    root = _Task(coro)
    while not root.done:
        if _ready:
            _ready.popleft()._step()
        elif _pending:
            _complete(_recv())
        else:
            raise RuntimeError("the script waits for something that can never happen "
                               "(a task awaiting itself, or an awaitable no call completes)")
    return root.result()


class _Tool:
    # _head is the call line's text after its id: the name, then the key
    # of the arguments.
    __slots__ = ("_name", "_head")

    def __init__(self, name):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_head", ',"n":%s,"a":' % _json.encode_basestring(name))

    def __call__(self, *args, **kw):
        # The whole of starting a call, in one function: each Python call
        # costs microseconds in this interpreter.
        if kw:
            if args:
                raise TypeError("tools.%s takes one dict of arguments or keyword arguments, not both" % self._name)
            a = kw
        elif len(args) == 1:
            a = args[0]
            if not isinstance(a, dict):
                raise TypeError("tools.%s takes a dict of arguments, not %s" % (self._name, type(a).__name__))
        elif args:
            raise TypeError("tools.%s takes one dict of arguments (or keyword arguments), not %d values" % (self._name, len(args)))
        else:
            a = kw
        try:
            text = "".join(_encode(a, 0))
        except (TypeError, ValueError) as e:
            raise TypeError("the arguments of tools.%s are not JSON: %s" % (self._name, e)) from None
        _next_id[0] = cid = _next_id[0] + 1
        c = _pending[cid] = _Call()
        _send_text('{"c":%d%s%s}' % (cid, self._head, text))
        return c

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Tool(self._name + "." + attr)

    def __repr__(self):
        return "<tool %s>" % self._name


class _Tools:
    """The tools this execution may call: `await tools.name({...})` or
    `await tools.name(key=value)`; `tools["a.b"]` for any name;
    `await tools.search(query)` and `await tools.describe(name)` find them."""

    # The instance's dict keeps each tool once looked up: the next lookup
    # finds it without a call to __getattr__.
    __slots__ = ("__dict__",)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        t = self.__dict__[name] = _Tool(name)
        return t

    def __setattr__(self, name, value):
        raise AttributeError("tools is read-only")

    def __delattr__(self, name):
        raise AttributeError("tools is read-only")

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError("tool names are strings")
        t = self.__dict__.get(name)
        if t is None:
            t = _Tool(name)
        return t

    def search(self, query, limit=10):
        if not isinstance(query, str):
            raise TypeError("tools.search(query, limit=10) needs a query string")
        return _start("s", '"q":%s,"k":%d' % (_dumps(query), int(limit)))

    def describe(self, name):
        return _start("d", '"n":%s' % _dumps(str(name)))

    def __dir__(self):
        return list(_names)

    def __repr__(self):
        return "<tools: %s>" % ", ".join(_names)


_names = []


# asyncio, as far as a script needs it: the real module costs about a
# second of CPU to import in this interpreter.
def _make_asyncio():
    m = type(sys)("asyncio")
    m.__doc__ = "ptc's asyncio for scripts: gather, create_task, sleep, wait_for, Semaphore, Lock."

    def gather(*aws, return_exceptions=False):
        tasks = [a if isinstance(a, _Call) else _Task(a) for a in aws]

        async def wait():
            out = []
            for t in tasks:
                try:
                    out.append(await t)
                except Exception as e:
                    if not return_exceptions:
                        raise
                    out.append(e)
            return out

        return _Task(wait())

    def create_task(coro, name=None):
        return coro if isinstance(coro, _Call) else _Task(coro)

    class _Sleep:
        def __init__(self, result):
            self.result = result

        def __await__(self):
            yield _YIELD
            return self.result

    def sleep(delay=0, result=None):
        return _Sleep(result)

    async def wait_for(aw, timeout=None):
        return await aw

    class Lock:
        def __init__(self):
            self._held = False

        async def acquire(self):
            while self._held:
                await sleep(0)
            self._held = True
            return True

        def release(self):
            self._held = False

        def locked(self):
            return self._held

        async def __aenter__(self):
            await self.acquire()

        async def __aexit__(self, *exc):
            self.release()

    class Semaphore(Lock):
        def __init__(self, value=1):
            self._value = value

        async def acquire(self):
            while self._value <= 0:
                await sleep(0)
            self._value -= 1
            return True

        def release(self):
            self._value += 1

        def locked(self):
            return self._value <= 0

    def run(*a, **k):
        raise RuntimeError("the script already runs in an event loop: await directly instead of asyncio.run")

    m.gather, m.create_task, m.ensure_future, m.sleep, m.wait_for = gather, create_task, create_task, sleep, wait_for
    m.Lock, m.Semaphore, m.BoundedSemaphore, m.run = Lock, Semaphore, Semaphore, run
    m.CancelledError = type("CancelledError", (BaseException,), {"__module__": "asyncio"})
    m.TimeoutError = TimeoutError
    m.iscoroutine = lambda o: hasattr(o, "send") and hasattr(o, "throw")
    m.Task = m.Future = _Call
    return m


# Errors: only the script's own frames, with its own line numbers.
_FILE = "<script>"
_lines = []


def _frames(tb):
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == _FILE:
            col = 0
            try:
                pos = list(code.co_positions())[tb.tb_lasti // 2]
                col = (pos[2] or 0) + 1
            except Exception:
                pass
            out.append((tb.tb_lineno, col, "<module>" if code.co_name == "__ptc_main__" else code.co_name))
        tb = tb.tb_next
    return out


def _failure(e):
    name = type(e).__name__
    f = {"type": name, "message": "%s: %s" % (name, e) if str(e) else name}
    if isinstance(e, SyntaxError) and e.filename == _FILE:
        f["syntax"] = True
        f["message"] = "SyntaxError: %s" % e.msg
        f["line"], f["col"] = e.lineno or 0, e.offset or 0
        return f
    frames = _frames(e.__traceback__)
    if frames:
        f["line"], f["col"] = frames[-1][0], frames[-1][1]
        stack = ["Traceback (most recent call last):"]
        for line, col, fn in frames:
            stack.append('  File "%s", line %d, in %s' % (_FILE, line, fn))
            if 0 < line <= len(_lines) and _lines[line - 1].strip():
                stack.append("    " + _lines[line - 1].strip())
        stack.append(f["message"])
        f["stack"] = "\n".join(stack)
    if isinstance(e, ToolError):
        f["tool"], f["code"], f["name"] = e.tool, e.code, e.name
        f["message"] = "%s: %s" % (e.name, e.message)
    return f


def _compile(src):
    tree = compile(src, _FILE, "exec", _ast.PyCF_ONLY_AST | 0x2000, dont_inherit=True)
    fn = _ast.AsyncFunctionDef(name="__ptc_main__", args=_ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                               body=tree.body or [_ast.Pass(lineno=1, col_offset=0)], decorator_list=[], returns=None, type_params=[],
                               lineno=1, col_offset=0)
    mod = _ast.Module(body=[fn], type_ignores=[])
    return compile(mod, _FILE, "exec", dont_inherit=True)


def _main():
    job = _recv_job()
    src = job["src"]
    _lines[:] = src.split("\n")
    _names[:] = job.get("names") or []
    sys.modules["asyncio"] = _make_asyncio()
    g = {"__name__": "__main__", "__builtins__": __builtins__, "tools": _Tools(), "input": job.get("input"),
         "ToolError": ToolError, "gather": sys.modules["asyncio"].gather}
    try:
        if "logging" in src:
            _setup_logging()
        if job.get("seed") is not None and "random" in src:
            import random
            random.seed(job["seed"])
        code = _compile(src)
        exec(code, g)
        value = _run(g.pop("__ptc_main__")())
    except BaseException as e:
        _flush()
        _send({"e": _failure(e)})
        return
    _flush()
    try:
        text = _dumps(value)
    except (TypeError, ValueError, RecursionError) as e:
        _send({"e": {"type": "TypeError", "message": "the script's return value is not JSON: %s" % e, "result": True}})
        return
    _send_text('{"r":%s}' % text)


_main()
# Everything the host needs went out through fd 1; the interpreter's
# finalisation (its collector, every module's teardown) would only cost
# the execution CPU time.
_posix._exit(0)
