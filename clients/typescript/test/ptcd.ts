// A real ptcd for the tests: built from this repository (or taken from
// $PTCD_BIN), started on a free loopback port, stopped after the test.

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** repoRoot is the ptc repository that holds this package. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

let built: string | undefined;

/** ptcdBinary returns $PTCD_BIN, or builds ptcd once per test process. */
export function ptcdBinary(): string {
  if (process.env.PTCD_BIN) return process.env.PTCD_BIN;
  if (built) return built;
  const dir = join(tmpdir(), "ptc-client-ts-tests");
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, "ptcd");
  execFileSync("go", ["build", "-o", bin, "./cmd/ptcd"], { cwd: repoRoot, stdio: "inherit" });
  built = bin;
  return bin;
}

/** Ptcd is a running server. */
export interface Ptcd {
  /** addr is host:port of its gRPC listener. */
  addr: string;
  process: ChildProcess;
  /** stop ends the server (SIGTERM, or SIGKILL with kill) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** startPtcd starts a server; demoTools registers the built-in demo tools. */
export async function startPtcd(opts: { demoTools?: boolean; args?: string[]; env?: Record<string, string> } = {}): Promise<Ptcd> {
  const bin = ptcdBinary();
  if (!existsSync(bin)) throw new Error(`ptcd binary ${bin} does not exist`);
  const args = ["--listen", "127.0.0.1:0", "--metrics-listen", "", "--shutdown-grace", "1s", ...(opts.args ?? [])];
  if (opts.demoTools) args.push("--demo-tools");
  const child = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...opts.env } });
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  const addr = await new Promise<string>((res, rej) => {
    const lines = createInterface({ input: child.stderr! });
    const log: string[] = [];
    lines.on("line", (line) => {
      log.push(line);
      try {
        const rec = JSON.parse(line) as { msg?: string; addr?: string };
        if (rec.msg === "ptcd listening" && rec.addr) res(rec.addr);
      } catch {
        // not a JSON log line
      }
    });
    child.once("exit", (code) => rej(new Error(`ptcd exited (${code}) before listening:\n${log.join("\n")}`)));
  });
  return {
    addr,
    process: child,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
