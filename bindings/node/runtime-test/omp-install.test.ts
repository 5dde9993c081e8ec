// A packed native tool installed by xcsh's runtime's own installer (docs/guide/src/ship.md): `omp
// plugin install` from a real local registry (verdaccio) takes the package `xcsh-plugins pack`
// wrote, with no file written by hand; a `--mode rpc` session then calls the tool, its `confirm` is
// an `extension_ui_request` frame (the generated extension entry lends it the runtime's UI), its
// preview is settled through `xd://resolve`; `omp plugin uninstall` removes it; and a package with
// no library for this machine is refused by `omp plugin install`, naming the platforms it has.
//
// Run by tests/tests/install_hosts.rs, which starts the registry, publishes the binding and the
// packed tools, and sets HOME, PATH (Bun first), the registry's variables and:
//   XCSH_TEST_TOOL_PACKAGE      the packed tool (batch_rename_preview, from the sample plugin)
//   XCSH_TEST_FOREIGN_PACKAGE   a packed tool with a library for another platform only
//   XCSH_TEST_SIGNED_PACKAGE    a packed tool: 1.0.0 signed by XCSH_TEST_KEY_A, 1.0.1 by
//                               XCSH_TEST_KEY_B
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";

import { mockRpcSession } from "./frames";

const CLI = path.join(import.meta.dir, "node_modules", "@oh-my-pi", "pi-coding-agent", "dist", "cli.js");
const TOOL = process.env.XCSH_TEST_TOOL_PACKAGE ?? "";
const FOREIGN = process.env.XCSH_TEST_FOREIGN_PACKAGE ?? "";
const SIGNED = process.env.XCSH_TEST_SIGNED_PACKAGE ?? "";
const [KEY_A, KEY_B] = [process.env.XCSH_TEST_KEY_A ?? "", process.env.XCSH_TEST_KEY_B ?? ""];

/// `omp ARGS` (the runtime's CLI under this Bun): exit code and output.
async function omp(args: string[], cwd: string) {
  const child = Bun.spawn([process.execPath, CLI, ...args], { cwd, stdout: "pipe", stderr: "pipe", env: process.env });
  const [stdout, stderr] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  return { code: await child.exited, stdout, stderr, all: `${stdout}\n${stderr}` };
}

const call = (name: string, args: unknown) => ({ content: [{ type: "toolCall", name, arguments: args }] });
const say = (words: string) => ({ content: [words] });

test("omp plugin install takes the packed tool; an rpc session asks, previews and resolves through it; uninstall removes it", async () => {
  expect(TOOL).not.toBe("");
  const home = process.env.HOME ?? "";
  const project = fs.realpathSync(fs.mkdtempSync(path.join(home, "project-")));
  // A project of its own (.omp/), so the runtime looks no further up for project settings.
  fs.mkdirSync(path.join(project, ".omp"), { recursive: true });

  const installed = await omp(["plugin", "install", TOOL], project);
  if (!installed.all.includes(`Installed ${TOOL}@1.0.0`)) {
    throw new Error(`omp plugin install ${TOOL} failed (PATH=${process.env.PATH}; bun: ${Bun.which("bun")}):\n${installed.all}`);
  }
  expect(installed.code).toBe(0);
  const listed = await omp(["plugin", "list", "--json"], project);
  expect(JSON.parse(listed.stdout).npm.map((plugin: any) => plugin.name)).toContain(TOOL);
  // Nothing hand-written anywhere: no .omp/tools/, no extension file.
  expect(fs.existsSync(path.join(project, ".omp", "tools"))).toBe(false);

  const files: string[] = [];
  for (let i = 0; i < 21; i++) {
    files.push(`a${i}.txt`);
    fs.writeFileSync(path.join(project, `a${i}.txt`), "x");
  }
  const script = [
    call("batch_rename_preview", { files, find: "a", replace: "b" }),
    say("I have previewed the renames."),
    call("write", { path: "xd://resolve", content: "The user asked for these renames." }),
    say("Done."),
  ];
  const { child, frames, send, stderr } = mockRpcSession({ cwd: project, script });
  try {
    await frames.next((f) => f.type === "ready", "ready");
    send({ id: "p1", type: "prompt", message: "Rename every a file to b." });
    const question = await frames.next((f) => f.type === "extension_ui_request" && f.method === "confirm", "confirm request");
    expect(question.title).toBe("Batch rename");
    expect(question.message).toStartWith("Plan renaming 21 files");
    send({ type: "extension_ui_response", id: question.id, confirmed: true });
    const previewed = await frames.next(
      (f) => f.type === "tool_execution_end" && f.toolName === "batch_rename_preview",
      "preview's tool_execution_end",
    );
    expect(JSON.stringify(previewed.result ?? previewed)).toContain("Prepared rename plan for 21 files");
    await frames.next((f) => f.type === "tool_execution_end" && f.toolName === "write", "resolve's tool_execution_end");
    await frames.next((f) => f.type === "agent_end", "agent_end");
    const renamed = fs.readdirSync(project).filter((name) => /^b\d+\.txt$/.test(name));
    expect(renamed.length).toBe(21);
  } catch (error) {
    throw new Error(`${error}\n--- stderr\n${stderr().slice(-4000)}\n--- frames\n${JSON.stringify(frames.seen).slice(-4000)}`);
  } finally {
    child.kill();
    await child.exited;
  }

  const removed = await omp(["plugin", "uninstall", TOOL], project);
  expect(removed.all).toContain(`Uninstalled ${TOOL}`);
  const after = await omp(["plugin", "list", "--json"], project);
  expect(JSON.parse(after.stdout).npm.map((plugin: any) => plugin.name)).not.toContain(TOOL);
}, 300_000);

test("omp plugin install refuses a packed tool with no library for this machine, naming the platforms it has", async () => {
  expect(FOREIGN).not.toBe("");
  const home = process.env.HOME ?? "";
  const refused = await omp(["plugin", "install", FOREIGN], home);
  expect(refused.code).not.toBe(0);
  expect(refused.all).toContain("has no library for this platform");
  expect(refused.all).toContain("it has: darwin-arm64 (aarch64-apple-darwin)");
  const listed = await omp(["plugin", "list", "--json"], home);
  expect(JSON.parse(listed.stdout).npm.map((plugin: any) => plugin.name)).not.toContain(FOREIGN);
}, 300_000);

test("a signed tool's publisher key is pinned at its first load; another key is refused, naming the command that accepts it", async () => {
  expect(SIGNED).not.toBe("");
  const home = process.env.HOME ?? "";
  const trustFile = path.join(home, ".xcsh", "agent", "trusted-plugins.json");
  const pinned = () => JSON.parse(fs.readFileSync(trustFile, "utf8")).publishers?.[SIGNED];

  // `omp install` (the top-level command) takes an npm spec as `omp plugin install` does.
  const first = await omp(["install", `${SIGNED}@1.0.0`], home);
  expect(first.all).toContain(`Installed ${SIGNED}@1.0.0`);
  expect(pinned()).toBe(KEY_A);

  const other = await omp(["plugin", "install", `${SIGNED}@1.0.1`], home);
  expect(other.code).not.toBe(0);
  expect(other.all).toContain(`refusing to load ${SIGNED} 1.0.1: signed by ${KEY_B}, not by the pinned publisher key ${KEY_A}`);
  expect(other.all).toContain(`npx @xcsh/native-plugins accept-key ${SIGNED} ${KEY_B}`);
  const listed = await omp(["plugin", "list", "--json"], home);
  expect(JSON.parse(listed.stdout).npm.find((plugin: any) => plugin.name === SIGNED)?.version).toBe("1.0.0");

  // The command the refusal names, from the binding the runtime installed.
  const cli = path.join(home, ".omp", "plugins", "node_modules", "@xcsh", "native-plugins", "cli.js");
  const accept = Bun.spawnSync(["node", cli, "accept-key", SIGNED, KEY_B], { env: process.env });
  expect(accept.exitCode).toBe(0);
  expect(pinned()).toBe(KEY_B);
  const accepted = await omp(["plugin", "install", `${SIGNED}@1.0.1`], home);
  expect(accepted.all).toContain(`Installed ${SIGNED}@1.0.1`);
  await omp(["plugin", "uninstall", SIGNED], home);
}, 300_000);
