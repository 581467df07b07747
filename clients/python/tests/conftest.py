"""A real ptcd for the tests: built from this repository (or taken from
$PTCD_BIN), started on a free loopback port, stopped after the tests."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Callable, Iterator

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from ptc_client import Client  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[3]

_built: str | None = None


def ptcd_binary() -> str:
    """ptcd_binary returns $PTCD_BIN, or builds ptcd once per test run."""
    global _built
    if os.environ.get("PTCD_BIN"):
        return os.environ["PTCD_BIN"]
    if _built is None:
        out = pathlib.Path(tempfile.gettempdir()) / "ptc-client-py-tests" / "ptcd"
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-o", str(out), "./cmd/ptcd"], cwd=REPO, check=True)
        _built = str(out)
    return _built


class Ptcd:
    """Ptcd is a running server; addr is host:port of its gRPC listener."""

    def __init__(self, demo_tools: bool = False, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
        cmd = [ptcd_binary(), "--listen", "127.0.0.1:0", "--metrics-listen", "", "--shutdown-grace", "1s", *args]
        if demo_tools:
            cmd.append("--demo-tools")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
        )
        ready = threading.Event()
        self.addr = ""
        self.log: list[str] = []

        # The drain thread reads the log until ptcd exits (a full pipe would
        # block the server); it ends when stderr closes.
        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                if not ready.is_set():
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if rec.get("msg") == "ptcd listening":
                        self.addr = rec["addr"]
                        ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        ready.wait(60)
        if not self.addr:
            self.stop(signal.SIGKILL)
            raise RuntimeError("ptcd did not start:\n" + "".join(self.log))

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """stop ends the server and waits for it to exit."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(30)


@pytest.fixture(scope="session")
def demo_server() -> Iterator[Ptcd]:
    """A ptcd with the demo tools."""
    srv = Ptcd(demo_tools=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def plain_server() -> Iterator[Ptcd]:
    """A ptcd without tools: the client serves them."""
    srv = Ptcd()
    yield srv
    srv.stop()


TRACING_ARGS = ("--tracing.endpoint", "127.0.0.1:1", "--tracing.insecure=true", "--tracing.sampling-ratio", "1")
"""ptcd flags that record every span and export to a collector that is not
there (the spans are dropped at export): enough for trace context."""

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
"""A sampled W3C traceparent: its trace id and span id."""


@pytest.fixture(scope="session")
def traced_server() -> Iterator[Ptcd]:
    """A ptcd with the demo tools that traces every execution."""
    srv = Ptcd(demo_tools=True, args=TRACING_ARGS)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def demo(demo_server: Ptcd) -> Iterator[Client]:
    with Client(demo_server.addr) as c:
        yield c


@pytest.fixture(scope="session")
def plain(plain_server: Ptcd) -> Iterator[Client]:
    with Client(plain_server.addr) as c:
        yield c


@pytest.fixture(scope="session")
def expected() -> object:
    return json.loads((REPO / "examples/expenses.expected.json").read_text())


@pytest.fixture(scope="session")
def expenses_js() -> str:
    return (REPO / "examples/expenses.js").read_text()


class ChargeServer:
    """ChargeServer is the HTTP endpoint behind a ptcd tool "pay.charge": a
    side effect. on_charge runs when a charge arrives; the request is never
    answered (the server is killed first). config is a ptcd configuration
    file declaring the tool."""

    def __init__(self, tmp: pathlib.Path, on_charge: Callable[[], None]) -> None:
        import http.server

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                on_charge()

            def log_message(self, *args: object) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        port = self.http.server_address[1]
        self.config = tmp / "ptcd.yaml"
        self.config.write_text(
            "tool_sources:\n"
            "  - name: pay\n"
            "    type: http\n"
            "    tools:\n"
            "      - name: charge\n"
            "        method: POST\n"
            f"        url: http://127.0.0.1:{port}/charge\n"
            "        timeout: 60s\n"
        )

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
