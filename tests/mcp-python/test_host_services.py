#!/usr/bin/env python3
"""Host services (elicitation, sampling) of `xcsh-plugins mcp`, and a preview's view under
`_meta["xcsh/view"]`, seen by the official MCP Python SDK.

Starts the server over stdio with the conformance fixture plugin, once per check, under each
isolation mode, and checks what a client declaring elicitation + sampling (and one declaring
neither) gets back. Prints one line per check and a closing `N passed, N failed`; exits 1 on
any failure. Uses only already-built binaries:

  XCSH_PLUGINS_BIN         default target/debug/xcsh-plugins
  XCSH_CONFORMANCE_PLUGIN  default target/debug/libfixture_conformance.so

Run it with mcp 1.x (requirements.txt: `ClientSession`, protocol 2025-11-25, the server asks
with elicitation/create and sampling/createMessage requests) and with mcp 2.x
(requirements-v2.txt: `mcp.Client` in its default mode, protocol 2026-07-28, the server answers
"input required" and the client retries with the answers). tests/tests/mcp_python.rs runs both.
"""

import asyncio
import os
import sys
import tempfile
from contextlib import ExitStack
from importlib.metadata import version as dist_version
from pathlib import Path

import anyio
import mcp
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("XCSH_PLUGINS_BIN", str(ROOT / "target/debug/xcsh-plugins"))
PLUGIN = os.environ.get("XCSH_CONFORMANCE_PLUGIN", str(ROOT / "target/debug/libfixture_conformance.so"))
TIMEOUT = float(os.environ.get("XCSH_MCP_TIMEOUT", "60"))
MODES = {"default": [], "in-process": ["--isolation", "in-process"]}
NO_MODEL = "No model available to plugins in this host."


def field(obj, snake, camel):
    """A field under its 2.x (snake_case) or 1.x (camelCase) attribute name."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def text_of(result):
    return "\n".join(getattr(c, "text", repr(c)) for c in result.content)


class Server:
    """One server process's parameters, cwd and stderr log."""

    def __init__(self, stack, mode):
        self.cwd = stack.enter_context(tempfile.TemporaryDirectory(prefix="xcsh-mcp-py-"))
        # What the ast_edit preview check rewrites.
        Path(self.cwd, "a.rs").write_text("fn a() { foo(1); }\n")
        self.errlog = stack.enter_context(tempfile.TemporaryFile("w+"))
        args = ["--no-default-dirs", "--plugin", PLUGIN, "--cwd", self.cwd, *MODES[mode], "mcp"]
        self.params = StdioServerParameters(command=BIN, args=args, cwd=self.cwd)

    def stderr(self):
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()


class Answers:
    """Callbacks that answer from a script and record what they were asked."""

    def __init__(self, elicit=None, sample_text=None):
        self.elicit, self.sample_text, self.asked = elicit, sample_text, []

    async def on_elicit(self, context, params):
        self.asked.append(params)
        action, content = self.elicit
        return types.ElicitResult(action=action, content=content)

    async def on_sample(self, context, params):
        self.asked.append(params)
        return types.CreateMessageResult(
            role="assistant", model="python-sdk-test",
            content=types.TextContent(type="text", text=self.sample_text))


# mcp 2.x: `mcp.Client` in its default mode, which takes the newest protocol (2026-07-28: no
# `initialize`, questions come back as "input required" and the client retries with the
# answers). mcp 1.x: `ClientSession`, `initialize` on 2025-11-25, questions as requests.
MODERN = hasattr(mcp, "Client")
EXPECTED_PROTOCOL = "2026-07-28" if MODERN else "2025-11-25"


async def call(mode, tool, arguments, answers=None):
    """Start a server, connect (declaring the capabilities `answers` implies), call one tool."""
    callbacks = {}
    if answers is not None:
        callbacks = {"elicitation_callback": answers.on_elicit, "sampling_callback": answers.on_sample}
    with ExitStack() as stack:
        server = Server(stack, mode)
        try:
            with anyio.fail_after(TIMEOUT):
                if MODERN:
                    transport = stdio_client(server.params, errlog=server.errlog)
                    async with mcp.Client(transport, **callbacks) as client:
                        assert client.protocol_version == EXPECTED_PROTOCOL, client.protocol_version
                        result = await client.call_tool(tool, arguments)
                else:
                    async with stdio_client(server.params, errlog=server.errlog) as (read, write):
                        async with ClientSession(read, write, **callbacks) as session:
                            init = await session.initialize()
                            version = field(init, "protocol_version", "protocolVersion")
                            assert version == EXPECTED_PROTOCOL, version
                            result = await session.call_tool(tool, arguments)
            return result, server.stderr()
        except BaseException as error:  # the server has exited by now: attach its stderr
            error.server_stderr = server.stderr()
            raise


def check_accept(result, answers):
    text = text_of(result)
    assert not field(result, "is_error", "isError"), text
    assert "action=accept" in text and "alice" in text and "alice@example.com" in text, text
    schema = field(answers.asked[0], "requested_schema", "requestedSchema")
    assert sorted(schema.get("required", [])) == ["email", "username"], schema
    for name in ("username", "email"):
        assert schema["properties"][name]["type"] == "string", schema
    return text


def check_action(action):
    def check(result, answers):
        text = text_of(result)
        assert not field(result, "is_error", "isError"), text
        assert f"action={action}" in text, text
        assert len(answers.asked) == 1, answers.asked
        return text
    return check


def check_invalid(result, answers):
    text = text_of(result)
    assert field(result, "is_error", "isError"), f"not an error: {text}"
    assert 'form field "untitledSingle"' in text, text
    return text


def check_sampling(result, answers):
    text = text_of(result)
    assert not field(result, "is_error", "isError"), text
    assert "LLM response: hello from the client" in text, text
    return text


def check_error(expected=None):
    def check(result, answers):
        text = text_of(result)
        assert field(result, "is_error", "isError"), f"not an error: {text}"
        assert expected is None or expected in text, text
        return text
    return check


def check_view(result, answers):
    """The built-in ast_edit's preview: its text, and how it looks under `_meta["xcsh/view"]`."""
    text = text_of(result)
    assert not field(result, "is_error", "isError"), text
    view = (result.meta or {}).get("xcsh/view")
    assert view, f"no view in {result.meta}"
    status = view["status"]
    assert (status["title"], status["state"], status["badge"]["label"]) == ("AST Edit", "success", "proposed"), status
    assert status["meta"] == ["1 replacement", "1 file", "in .", "searched 1"], status
    diff = view["blocks"][0]["expanded"][0]
    assert diff == {
        "type": "diff",
        "path": "a.rs",
        "lines": [{"kind": "removed", "text": "1:10 foo(1)"}, {"kind": "added", "text": "1:10 bar(1)"}],
    }, diff
    return f"{status['title']}: {' · '.join(status['meta'])}"


CHECKS = [
    # name, tool, arguments, answers (None: client declares neither capability), check
    ("elicitation accept", "test_elicitation", {"message": "Who are you?"},
     lambda: Answers(elicit=("accept", {"username": "alice", "email": "alice@example.com"})), check_accept),
    ("elicitation decline", "test_elicitation", {"message": "Who are you?"},
     lambda: Answers(elicit=("decline", None)), check_action("decline")),
    ("elicitation cancel", "test_elicitation", {"message": "Who are you?"},
     lambda: Answers(elicit=("cancel", None)), check_action("cancel")),
    ("elicitation invalid enum", "test_elicitation_sep1330_enums", {},
     lambda: Answers(elicit=("accept", {"untitledSingle": "option9"})), check_invalid),
    ("sampling", "test_sampling", {"prompt": "Say hello"},
     lambda: Answers(sample_text="hello from the client"), check_sampling),
    ("no capability: elicitation", "test_elicitation", {"message": "Who are you?"},
     lambda: None, check_error()),
    ("no capability: sampling", "test_sampling", {"prompt": "Say hello"},
     lambda: None, check_error(NO_MODEL)),
    ("ast_edit preview's view", "ast_edit", {"ops": [{"pat": "foo($A)", "out": "bar($A)"}]},
     lambda: None, check_view),
]


def one_line(s, limit=160):
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


async def run_checks():
    passed = failed = 0
    for mode in MODES:
        for name, tool, arguments, make_answers, check in CHECKS:
            answers = make_answers()
            stderr = ""
            try:
                result, stderr = await call(mode, tool, arguments, answers)
                detail = check(result, answers)
                passed += 1
                print(f"PASS [{mode}] {name}: {one_line(detail)}", flush=True)
            except Exception as error:
                failed += 1
                print(f"FAIL [{mode}] {name}: {type(error).__name__}: {one_line(error, 400)}", flush=True)
                stderr = getattr(error, "server_stderr", stderr).strip()
                if stderr:
                    print("  server stderr:\n    " + stderr.replace("\n", "\n    "), flush=True)
    return passed, failed


def main():
    for path in (BIN, PLUGIN):
        if not os.path.isfile(path):
            print(f"missing: {path} (build it first, or set XCSH_PLUGINS_BIN / XCSH_CONFORMANCE_PLUGIN)")
            return 2
    print(f"mcp {dist_version('mcp')}, python {sys.version.split()[0]}, protocol {EXPECTED_PROTOCOL}, server {BIN}")
    passed, failed = asyncio.run(run_checks())
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
