#!/usr/bin/env python3
"""client-doc-snippets.py writes every TypeScript and Python snippet of
docs/clients.md as a file of its own, for scripts/check-client-install.sh to
type-check (tsc --strict in a project that installed the packed TypeScript
client, mypy --strict in a venv that installed the Python client).

A snippet uses names the surrounding prose supplies (a client, a model, a
tool); the prelude below declares those it uses and does not define. A
block preceded by the line "<!-- not type-checked: why -->" is skipped
(fragments, snippets for packages the clients do not depend on).

Usage: client-doc-snippets.py docs/clients.md OUT_TS_DIR OUT_PY_DIR
"""

from __future__ import annotations

import pathlib
import re
import sys

# Names a TypeScript snippet may use without defining them, and how they
# are declared. The packages' types come in under aliases that no snippet
# uses, so a snippet's own imports never clash with the prelude's.
TS_PRELUDE = {
    "client": "declare const client: __ptc.Client;",
    "weather": "declare const weather: __ptc.ClientTool;",
    "askReviewer": "declare const askReviewer: __ptc.ClientToolDefinition;",
    "modelWrittenScript": "declare const modelWrittenScript: string;",
    "source": "declare const source: string;",
    "model": "declare const model: __ai.LanguageModel;",
    "prompt": "declare const prompt: string;",
    "tools": "declare const tools: __ai.ToolSet;",
    "db": "declare const db: { save(id: string, continuation: string): Promise<void> };",
    "ok": "declare function ok(action: __ptc.PendingAction): boolean;",
    "askHuman": "declare function askHuman(args: unknown): unknown;",
    "policy": "declare const policy: { allows(tool: string, args: unknown): boolean };",
}
TS_IMPORTS = 'import type * as __ptc from "@ptcrun/client";\nimport type * as __ai from "ai";\n'

PY_PRELUDE = {
    "client": "client: Client",
    "weather": "weather: ClientTool",
    "ask_reviewer": "ask_reviewer: ClientTool",
    "model_written_script": "model_written_script: str",
    "source": "source: str",
    "ok": "def ok(action: PendingAction) -> bool:\n    raise NotImplementedError",
    "ask_human": "def ask_human(args: Any) -> Any:\n    raise NotImplementedError",
    "policy": "class _Policy:\n    def allows(self, tool: str, args: Any) -> bool:\n        raise NotImplementedError\n\n\npolicy = _Policy()",
}
PY_IMPORTS = "from typing import Any\nfrom ptc_client import Client, ClientTool, PendingAction\n"

FENCE = re.compile(r"^```(\w*)\s*$")
SKIP = re.compile(r"^<!-- not type-checked: .+ -->$")


def blocks(text: str) -> list[tuple[int, str, str]]:
    """blocks returns (line, language, code) for every fenced block not marked as skipped."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i + 1
        j = start
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        skipped = i > 0 and SKIP.match(lines[i - 1].strip()) is not None
        if not skipped:
            out.append((start, lang, "\n".join(lines[start:j]) + "\n"))
        i = j + 1
    return out


def defines(code: str, name: str, lang: str) -> bool:
    """defines reports whether code binds name itself: a declaration, or
    an import of it."""
    if lang == "ts":
        pats = [rf"\b(const|let|var|function|class)\s+{name}\b", rf"^import[^\n;]*[{{,\s]{name}[,}}\s][^\n;]*from"]
    else:
        pats = [rf"^(def|class|async def)\s+{name}\b", rf"^{name}\s*[:=]", rf"^from\s+\S+\s+import\s+[^\n]*\b{name}\b", rf"^\s*with .* as {name}:"]
    return any(re.search(p, code, re.M) for p in pats)


def uses(code: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){name}\b", code) is not None


def main() -> int:
    doc, ts_dir, py_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    ts_dir.mkdir(parents=True, exist_ok=True)
    py_dir.mkdir(parents=True, exist_ok=True)
    counts = {"ts": 0, "python": 0}
    for line, lang, code in blocks(doc.read_text()):
        if lang == "ts":
            decls = [d for n, d in TS_PRELUDE.items() if uses(code, n) and not defines(code, n, "ts")]
            # Imports first (a module's imports may follow declarations, but
            # keep the snippet's line numbers readable: the prelude is one
            # comment line per declaration on top).
            text = code + "\n" + TS_IMPORTS + "\n".join(decls) + "\nexport {};\n"
            (ts_dir / f"clients_md_{line}.ts").write_text(f"// docs/clients.md line {line}\n" + text)
            counts["ts"] += 1
        elif lang == "python":
            decls = [d for n, d in PY_PRELUDE.items() if uses(code, n) and not defines(code, n, "python")]
            text = f"# docs/clients.md line {line}\n" + PY_IMPORTS + "\n".join(decls) + "\n\n" + code
            (py_dir / f"clients_md_{line}.py").write_text(text)
            counts["python"] += 1
    print(f"docs/clients.md: {counts['ts']} TypeScript and {counts['python']} Python snippets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
