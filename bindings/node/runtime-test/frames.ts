// The runtime as an RPC client drives it: `omp --mode rpc` with the mock model answering a
// script, its JSON frames read from stdout line by line (with a wait for the next that
// matches), frames sent to its stdin. Shared by the runtime tests that drive it so.
import * as path from "node:path";

const CLI = path.join(import.meta.dir, "node_modules", "@oh-my-pi", "pi-coding-agent", "dist", "cli.js");
const MOCK_PROVIDER = path.join(import.meta.dir, "ext", "mock-provider.ts");

/// Frames from a child's stdout, line by line.
export class Frames {
  private buffer = "";
  private waiting: Array<{ match: (frame: any) => boolean; resolve: (frame: any) => void }> = [];
  readonly seen: any[] = [];

  feed(chunk: string) {
    this.buffer += chunk;
    let newline;
    while ((newline = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (!line.startsWith("{")) continue;
      let frame;
      try {
        frame = JSON.parse(line);
      } catch {
        continue;
      }
      this.seen.push(frame);
      for (const waiter of this.waiting.splice(0)) {
        if (waiter.match(frame)) waiter.resolve(frame);
        else this.waiting.push(waiter);
      }
    }
  }

  next(match: (frame: any) => boolean, what: string, ms = 60_000): Promise<any> {
    const found = this.seen.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} frame in ${ms} ms; saw: ${this.seen.map((f) => f.type).join(", ")}`)), ms);
      this.waiting.push({ match, resolve: (frame) => (clearTimeout(timer), resolve(frame)) });
    });
  }
}


/// `omp --mode rpc --no-session` in `cwd`, with `extensions` and the mock model answering
/// `script`, under `env` (the process's own by default).
export function mockRpcSession(options: { cwd: string; script: unknown[]; extensions?: string[]; env?: Record<string, string | undefined> }) {
  const extensions = [...(options.extensions ?? []), MOCK_PROVIDER].flatMap((file) => ["--extension", file]);
  const child = Bun.spawn([process.execPath, CLI, "--mode", "rpc", "--no-session", ...extensions, "--model", "xcshmock/m"], {
    cwd: options.cwd,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...(options.env ?? process.env), XCSH_TEST_MOCK_SCRIPT: JSON.stringify(options.script) },
  });
  const frames = new Frames();
  const decoder = new TextDecoder();
  (async () => {
    for await (const chunk of child.stdout) frames.feed(decoder.decode(chunk));
  })();
  let stderr = "";
  (async () => {
    for await (const chunk of child.stderr) stderr += decoder.decode(chunk);
  })();
  const send = (frame: unknown) => {
    child.stdin.write(JSON.stringify(frame) + "\n");
    child.stdin.flush();
  };
  return { child, frames, send, stderr: () => stderr };
}
