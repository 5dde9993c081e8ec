// The smallest host the factory accepts: a `pi` holding only `cwd` and `pushPendingAction`
// (type-checked with `tsc --strict` by the tests).
import { nativeToolFactory, type NativePendingAction, type NativeTool } from "@xcsh/native-plugins";

const pending: NativePendingAction[] = [];
const factory = nativeToolFactory({ plugins: ["./libmy_tool.so"], isolation: "process", timeoutMs: 30_000 });

export async function load(): Promise<NativeTool[]> {
  const tools = await factory({ cwd: process.cwd(), pushPendingAction: (action) => pending.push(action) });
  for (const error of factory.loadErrors) console.warn(`${error.path}: ${error.message}`);
  return tools;
}

export async function applyNewest(reason: string): Promise<string | undefined> {
  const action = pending.pop();
  const result = await action?.apply(reason);
  const first = result?.content[0];
  return first?.type === "text" ? first.text : undefined;
}
