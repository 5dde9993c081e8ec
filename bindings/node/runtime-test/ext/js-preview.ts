// A plain TypeScript deferrable tool, to show that native and JS previews share one LIFO stack.
import type { CustomToolFactory } from "@oh-my-pi/pi-coding-agent/extensibility/custom-tools";

const factory: CustomToolFactory = (pi) => ({
  name: "js_preview",
  label: "JS Preview",
  description: "Stages writing `text` to `file`; the write happens when the preview is applied.",
  parameters: {
    type: "object",
    properties: { file: { type: "string" }, text: { type: "string" } },
    required: ["file", "text"],
  } as never,
  approval: "read",
  deferrable: true,
  async execute(_id, params: { file: string; text: string }) {
    pi.pushPendingAction({
      label: `JS: write ${params.file}`,
      sourceToolName: "js_preview",
      async apply() {
        await Bun.write(`${pi.cwd}/${params.file}`, params.text);
        return { content: [{ type: "text", text: `wrote ${params.file}` }] };
      },
    });
    return { content: [{ type: "text", text: `staged ${params.file}` }] };
  },
});

export default factory;
