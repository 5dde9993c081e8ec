// The guide's "Ship and install" (docs/guide/src/ship.md), last step: the tool `xcsh-plugins new` scaffolded, packed and
// published, installed by the guide's own command (`omp plugin install my-tool`, run by
// tests/tests/ship_a_plugin.rs before this file), answers in a session of xcsh's runtime: its
// `confirm` reaches the RPC client, its preview is applied through `xd://resolve`.
//
// Environment (set by tests/tests/ship_a_plugin.rs): HOME (where the runtime installed it),
// XCSH_TEST_PROJECT (the session's directory), XCSH_TEST_TOOL (the tool's name, `my_tool`).
import { expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";

import { mockRpcSession } from "./frames";


test("the scaffolded tool, installed by omp plugin install, asks, previews and saves through resolve", async () => {
  const project = process.env.XCSH_TEST_PROJECT ?? "";
  const tool = process.env.XCSH_TEST_TOOL ?? "";
  const script = [
    { content: [{ type: "toolCall", name: tool, arguments: { name: "world" } }] },
    { content: ["I have previewed the greeting."] },
    { content: [{ type: "toolCall", name: "write", arguments: { path: "xd://resolve", content: "Save it." } }] },
    { content: ["Done."] },
  ];
  const { child, frames, send, stderr } = mockRpcSession({ cwd: project, script });
  const next = (match: (f: any) => boolean, what: string) => frames.next(match, what, 90_000);
  try {
    await next((f) => f.type === "ready", "ready");
    send({ id: "p1", type: "prompt", message: "Greet the world." });
    const question = await next((f) => f.type === "extension_ui_request" && f.method === "confirm", "confirm request");
    expect(question.message).toBe("Greet world?");
    send({ type: "extension_ui_response", id: question.id, confirmed: true });
    const ended = await next((f) => f.type === "tool_execution_end" && f.toolName === tool, "the tool's end");
    expect(JSON.stringify(ended.result ?? ended)).toContain("Hello, world!");
    await next((f) => f.type === "agent_end", "agent_end");
    expect(fs.readFileSync(path.join(project, "greeting.txt"), "utf8")).toBe("Hello, world!");
  } catch (error) {
    throw new Error(`${error}\n--- stderr\n${stderr().slice(-4000)}`);
  } finally {
    child.kill();
    await child.exited;
  }
}, 300_000);
