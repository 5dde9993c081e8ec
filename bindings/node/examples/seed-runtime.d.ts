// Types of seed-runtime.js (the runtime side the tests and the demo play).
import type { NativePendingAction, NativeToolResult } from "@xcsh/native-plugins";

export interface PendingLike {
  label: string;
  sourceToolName?: string;
  details?: unknown;
  apply(reason: string): Promise<NativeToolResult>;
  reject?(reason: string): Promise<NativeToolResult | undefined>;
}
export declare class PendingActionStore {
  stack: PendingLike[];
  push(action: PendingLike | NativePendingAction): void;
  peek(): PendingLike | undefined;
  pop(): PendingLike | undefined;
  readonly hasPending: boolean;
  readonly count: number;
}
export declare function resolve(
  store: PendingActionStore,
  action: "apply" | "discard",
  reason: string,
): Promise<NativeToolResult & { details: Record<string, unknown> }>;
export declare function runtimeApi(cwd: string, store?: PendingActionStore | null, logger?: unknown): {
  cwd: string;
  pushPendingAction?: (action: NativePendingAction) => void;
};
export declare function text(result: NativeToolResult | undefined): string;
export declare const NO_PENDING: string;
