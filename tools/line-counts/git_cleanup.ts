/**
 * `git_cleanup`: delete the local branches already merged into the current one, after the
 * model resolves the preview. The TypeScript counterpart of plugins/git-cleanup/src/lib.rs
 * (issue 52), written to measure it: same git commands, checks, texts and errors.
 */
import type { CustomToolAPI, CustomToolFactory } from "@oh-my-pi/pi-coding-agent";

/** Branches never offered for deletion, besides the current one. */
const PROTECTED = ["main", "master"];

/** Run git in the session's directory; its output, or an error with what git said. */
async function git(pi: CustomToolAPI, args: string[]): Promise<string> {
	const result = await pi.exec("git", args);
	if (result.code !== 0) {
		throw new Error(`git ${args.join(" ")} failed: ${result.stderr.trim()}`);
	}
	return result.stdout;
}

const factory: CustomToolFactory = pi => ({
	name: "git_cleanup",
	label: "Git cleanup",
	description:
		"Delete the local git branches already merged into the current branch. Previews the list; nothing is deleted until resolve applies it.",
	parameters: pi.zod.object({
		keep: pi.zod.array(pi.zod.string()).optional().describe("Branches to keep even when merged"),
	}),

	async execute(_toolCallId, params) {
		// `--format` first: `--merged` takes the argument after it as its commit.
		const merged = await git(pi, ["branch", "--format=%(refname:short)", "--merged"]);
		const current = (await git(pi, ["branch", "--show-current"])).trim();
		const keep = params.keep ?? [];
		const branches = merged
			.split("\n")
			.map(line => line.trim())
			.filter(b => b !== "" && b !== current && !PROTECTED.includes(b))
			.filter(b => !keep.includes(b));
		const n = branches.length;
		if (n === 0) {
			return { content: [{ type: "text", text: "No merged branches to delete." }] };
		}
		const question = `Delete ${n} merged branches: ${branches.join(", ")}?`;
		if (n > 3 && pi.hasUI && !(await pi.ui.confirm("Git cleanup", question))) {
			return { content: [{ type: "text", text: "The user kept the branches; nothing was planned." }] };
		}
		const listed = branches.join(", ");
		pi.pushPendingAction({
			label: `Git cleanup: delete ${n} merged branches`,
			details: { branches },
			sourceToolName: "git_cleanup",
			apply: async () => {
				await git(pi, ["branch", "-d", ...branches]);
				return { content: [{ type: "text", text: `Deleted ${n} merged branches: ${branches.join(", ")}` }] };
			},
		});
		return {
			content: [
				{ type: "text", text: `${n} merged branches to delete: ${listed}. Call resolve to apply or discard.` },
			],
		};
	},
});

export default factory;
