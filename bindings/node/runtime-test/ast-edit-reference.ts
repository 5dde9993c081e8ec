// xcsh's own `ast_edit` engine, for `tests/tests/ast_edit_upstream.rs`: the `astEdit`
// function of `@oh-my-pi/pi-natives`, the native addon of the runtime this directory installs
// (it loads under Bun). Argument: `{"path": ..., "rewrites": {pat: out}, "dryRun": bool}` as
// JSON. Prints `{totalReplacements, fileChanges, applied}`, or `{error}` when it throws (as it
// does for nested matches when not a dry run).
import { astEdit } from "@oh-my-pi/pi-natives";

const request = JSON.parse(process.argv[2] ?? "{}");
try {
  const result = await astEdit({
    rewrites: request.rewrites,
    path: request.path,
    dryRun: request.dryRun,
  });
  console.log(
    JSON.stringify({
      totalReplacements: result.totalReplacements,
      fileChanges: result.fileChanges,
      applied: result.applied,
    }),
  );
} catch (error) {
  console.log(JSON.stringify({ error: String((error as Error)?.message ?? error) }));
}
