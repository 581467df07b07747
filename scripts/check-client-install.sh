#!/usr/bin/env bash
# check-client-install.sh installs both clients the way docs/clients.md
# says, from a fresh copy of the repository's tracked files, into projects of
# their own, and type-checks every snippet of docs/clients.md against what
# was installed:
#
#   TypeScript  npm pack → the tarball installed into a fresh ESM project and
#               a fresh CommonJS one (with the adapters' SDKs), both compiled
#               with tsc --strict under module/moduleResolution NodeNext;
#               npm install --install-links of the built folder; the docs'
#               TypeScript snippets compiled with tsc --strict.
#   Python      pip install --no-build-isolation --no-index into a venv made
#               with --system-site-packages from Debian's python3 (grpcio,
#               protobuf and setuptools from Debian: no PyPI); a wheel built
#               the same way; the docs' Python snippets checked with
#               mypy --strict, and calls a type checker must refuse.
#
# With PTCD_BIN set, each installed client also runs a script against that
# ptcd. npm reads its cache first (--prefer-offline). Needs node/npm,
# Debian's python3 with python3-venv, python3-setuptools, python3-grpcio,
# python3-protobuf and mypy. Run from anywhere: bash scripts/check-client-install.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
py=/usr/bin/python3
work="$(mktemp -d "${TMPDIR:-/tmp}/ptc-client-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
npm_flags=(--prefer-offline --no-audit --no-fund --loglevel=error)

# The pinned versions of the SDKs and tools, from the package's own lock.
lock="$repo/clients/typescript/package-lock.json"
pin() { node -e 'const l=require(process.argv[1]); console.log(l.packages["node_modules/"+process.argv[2]].version)' "$lock" "$1"; }
deps=("ai@$(pin ai)" "zod@$(pin zod)" "@openai/agents@$(pin @openai/agents)" "typescript@$(pin typescript)" "@types/node@$(pin @types/node)")

t0=$SECONDS
lap() { printf -- '-- %s (%ds)\n' "$1" "$((SECONDS - t0))"; t0=$SECONDS; }

# A fresh copy: the tracked files only, as a clone has them (no dist/, no
# node_modules/, no build/).
mkdir -p "$work/src"
(cd "$repo" && git ls-files -z -- clients/typescript clients/python docs/clients.md | xargs -0 tar -cf - | tar -xf - -C "$work/src")
lap "fresh copy of the clients"

# ---- TypeScript
ts="$work/src/clients/typescript"
(cd "$ts" && npm ci "${npm_flags[@]}" >/dev/null && npm pack --pack-destination "$work" "${npm_flags[@]}" >/dev/null)
tarball="$(ls "$work"/ptcrun-client-*.tgz)"
lap "npm ci && npm pack: $(basename "$tarball")"

# consumer makes a project of the given module type that installs the
# package (the remaining arguments: npm install's) and the SDKs.
consumer() {
  local dir="$1" type="$2"
  shift 2
  mkdir -p "$dir"
  printf '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "%s" }\n' "$type" >"$dir/package.json"
  cat >"$dir/tsconfig.json" <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022"],
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "types": ["node"],
    "skipLibCheck": true
  },
  "include": ["*.ts", "snippets/*.ts"]
}
JSON
  (cd "$dir" && npm install "${npm_flags[@]}" "$@" "${deps[@]}" >/dev/null)
}

esm="$work/esm"
consumer "$esm" module "$tarball"
cat >"$esm/main.ts" <<'TS'
import { Client, clientTool, type CompletedResult } from "@ptcrun/client";
import { ptcTools } from "@ptcrun/client/ai";
import { ptcAgentTool } from "@ptcrun/client/openai-agents";
import { z } from "zod";

const weather = clientTool({
  name: "weather",
  inputSchema: z.object({ city: z.string() }),
  handler: async ({ city }) => ({ city, temp: 21 }),
});
const addr = process.env.PTCD_ADDR;
if (addr) {
  const client = new Client(addr);
  const res: CompletedResult = await client.run({ source: "return await tools.weather({city: 'Oslo'})", tools: [weather] });
  if (!res.ok) throw new Error(`${res.error.kind}: ${res.modelMessage}`);
  const tools = await ptcTools({ client, tools: [weather] });
  const agentTool = await ptcAgentTool({ client });
  console.log(JSON.stringify(res.value), Object.keys(tools).join(), agentTool.name);
  client.close();
}
TS
(cd "$esm" && npx tsc -p . --outDir out)
lap "ESM project: tarball installed, tsc --strict (NodeNext)"

cjs="$work/cjs"
consumer "$cjs" commonjs "$tarball"
cat >"$cjs/main.ts" <<'TS'
// A CommonJS module: tsc compiles these imports to require() of the
// package's ES modules, which Node loads (require of ESM, Node >= 20.19).
import { Client, type CompletedResult } from "@ptcrun/client";
import { ptcTools } from "@ptcrun/client/ai";

async function main(): Promise<void> {
  const addr = process.env.PTCD_ADDR;
  if (!addr) return;
  const client = new Client(addr);
  const res: CompletedResult = await client.execute({ source: "return 6 * 7" });
  if (!res.ok) throw new Error(res.error.kind);
  const tools = await ptcTools({ client });
  console.log(JSON.stringify(res.value), Object.keys(tools).join());
  client.close();
}
void main();
TS
(cd "$cjs" && npx tsc -p . --outDir out)
lap "CommonJS project: tarball installed, tsc --strict (NodeNext)"

links="$work/links"
(cd "$ts" && npm run build >/dev/null)
consumer "$links" module --install-links "$ts"
cp "$esm/main.ts" "$links/main.ts"
(cd "$links" && npx tsc -p . --noEmit)
test ! -L "$links/node_modules/@ptcrun/client" || { echo "npm install --install-links made a symlink"; exit 1; }
lap "npm install --install-links of the built folder, tsc --strict"

mkdir -p "$esm/snippets"
"$py" "$repo/scripts/client-doc-snippets.py" "$work/src/docs/clients.md" "$esm/snippets" "$work/py-snippets"
(cd "$esm" && npx tsc -p . --noEmit)
# What the types must refuse: each line below fails on its own.
mkdir -p "$esm/refused"
cat >"$esm/refused/refused.ts" <<'TS'
import { Client } from "@ptcrun/client";
const client = new Client("127.0.0.1:7878");
await client.run({ source: "return 1", resumable: true });
const paused = await client.execute({ source: "return 1", resumable: true });
if (!paused.ok) console.log(paused.error.kind);
export {};
TS
if (cd "$esm" && npx tsc --ignoreConfig --strict --noEmit --module NodeNext --moduleResolution NodeNext --target ES2022 --skipLibCheck --types node refused/refused.ts >"$work/refused-ts.out" 2>&1); then
  echo "tsc accepted code it must refuse"; exit 1
fi
for want in "refused.ts(3," "refused.ts(5,"; do
  grep -qF -- "$want" "$work/refused-ts.out" || { echo "tsc did not refuse line $want:"; cat "$work/refused-ts.out"; exit 1; }
done
lap "docs/clients.md TypeScript snippets: tsc --strict; run({resumable}) and a paused result's error refused"

# ---- Python
"$py" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --no-build-isolation "$work/src/clients/python"
"$work/venv/bin/pip" wheel --quiet --no-index --no-deps --no-build-isolation -w "$work/wheels" "$work/src/clients/python"
ls "$work"/wheels/ptc_client-*.whl >/dev/null
lap "pip install --no-build-isolation into a venv (Debian's grpcio, protobuf, setuptools); wheel built"

mkdir -p "$work/py-check" && cd "$work/py-check"
"$work/venv/bin/python" -c 'import ptc_client, sys; assert "site-packages" in ptc_client.__file__, ptc_client.__file__'
cat >refused.py <<'PY'
from ptc_client import Client

client = Client("127.0.0.1:7878")
client.execute("return 1", timout=5)
client.execute("return 1", limits={"timeout": "30s"})
client.run("return 1", resumable=True)
PY
mypy_flags=(--strict --python-executable "$work/venv/bin/python" --no-incremental --cache-dir=/dev/null)
if mypy "${mypy_flags[@]}" refused.py >refused.out 2>&1; then
  echo "mypy accepted calls it must refuse:"; cat refused.out; exit 1
fi
for want in 'unexpected keyword argument "timout"' '"timeout"' 'unexpected keyword argument "resumable"'; do
  grep -qi -- "$want" refused.out || { echo "mypy did not report $want:"; cat refused.out; exit 1; }
done
mypy "${mypy_flags[@]}" "$work"/py-snippets/*.py
lap "docs/clients.md Python snippets: mypy --strict; misspelt and mistyped options refused"

if [ -n "${PTCD_BIN:-}" ]; then
  log="$work/ptcd.log"
  "$PTCD_BIN" --listen 127.0.0.1:0 --metrics-listen "" --logging.format json 2>"$log" &
  ptcd_pid=$!
  trap 'kill "$ptcd_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
  addr=""
  for _ in $(seq 1 300); do
    addr="$(sed -n 's/.*"msg":"ptcd listening".*"addr":"\([^"]*\)".*/\1/p' "$log" | sed -n 1p)"
    [ -n "$addr" ] && break
    kill -0 "$ptcd_pid" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "ptcd did not start"; cat "$log"; exit 1; }
  (cd "$esm" && PTCD_ADDR="$addr" node out/main.js)
  (cd "$cjs" && PTCD_ADDR="$addr" node out/main.js)
  "$work/venv/bin/python" -c '
import sys
from ptc_client import Client
with Client(sys.argv[1]) as c:
    res = c.execute("return 6 * 7")
    assert res.error is None and res.value == 42, res
    print(res.value)
' "$addr"
  kill "$ptcd_pid"
  lap "the installed clients ran scripts against ptcd"
fi
echo "clients install: ok"
