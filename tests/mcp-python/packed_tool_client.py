#!/usr/bin/env python3
"""A packed native tool served over MCP, as an MCP client starts it: `npx -y PACKAGE` from a
registry, or a `.mcpb` bundle's server as its manifest says. Seen by the official MCP Python
SDK (1.x `ClientSession`): the tool list, a call that previews a rename (its text, and how it
looks under `_meta["xcsh/view"]`), and `resolve` applying it. tests/tests/install_hosts.rs runs
it.

  packed_tool_client.py WORKDIR COMMAND [ARG...]

The server's environment is this process's. Prints what it saw; exits 1 on any mismatch.
"""

import asyncio
import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TIMEOUT = float(os.environ.get("XCSH_MCP_TIMEOUT", "180"))


def text_of(result):
    return "\n".join(getattr(c, "text", repr(c)) for c in result.content)


async def main():
    workdir = Path(sys.argv[1])
    command, args = sys.argv[2], sys.argv[3:]
    (workdir / "notes-draft.md").write_text("draft\n")
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd=str(workdir))
    with open(workdir.parent / "server-stderr.log", "w") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), TIMEOUT)
                tools = sorted(tool.name for tool in (await session.list_tools()).tools)
                print("tools:", ", ".join(tools))
                if tools != ["batch_rename_preview", "resolve"]:
                    raise SystemExit(f"unexpected tools {tools}")
                preview = await asyncio.wait_for(
                    session.call_tool(
                        "batch_rename_preview",
                        {"files": ["notes-draft.md"], "find": "draft", "replace": "final"},
                    ),
                    TIMEOUT,
                )
                print("preview:", text_of(preview).splitlines()[0])
                if preview.isError or (workdir / "notes-final.md").exists():
                    raise SystemExit(f"the preview failed or renamed already: {text_of(preview)}")
                view = (preview.meta or {}).get("xcsh/view") or {}
                status = view.get("status") or {}
                rows = [
                    row
                    for block in view.get("blocks", [])
                    if block.get("type") == "section"
                    for inner in block.get("expanded", [])
                    if inner.get("type") == "table"
                    for row in inner.get("rows", [])
                ]
                print("view:", status.get("title"), status.get("meta"), rows)
                if status.get("title") != "Batch Rename" or rows != [["notes-draft.md", "notes-final.md"]]:
                    raise SystemExit(f"unexpected view {view}")
                applied = await asyncio.wait_for(
                    session.call_tool("resolve", {"action": "apply", "reason": "from the MCP client"}),
                    TIMEOUT,
                )
                print("resolve:", text_of(applied).splitlines()[0])
                if applied.isError or not (workdir / "notes-final.md").exists():
                    raise SystemExit(f"resolve did not rename: {text_of(applied)}")
    print("renamed: notes-draft.md -> notes-final.md")


if __name__ == "__main__":
    asyncio.run(main())
