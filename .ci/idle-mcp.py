"""An idle MCP session's cost: how many plugin processes `xcsh-plugins mcp` keeps and the
resident memory of the host plus its children, one second after a client initialised and
listed the tools (nobody called anything).

    python3 .ci/idle-mcp.py target/release/xcsh-plugins DIR CACHE_DIR [--no-cache]

DIR holds the plugin files; CACHE_DIR is the definitions cache to use (XCSH_CACHE_DIR): run it
once to fill the cache (cold), again to see the warm session; --no-cache for the old behaviour.
"""
import json, os, subprocess, sys, time
cli, plugins, cache, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
env = dict(os.environ, XCSH_CACHE_DIR=cache)
p = subprocess.Popen([cli, "mcp", "--no-default-dirs", "--plugin", plugins, *extra],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
def send(msg):
    p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "idle", "version": "0"}}})
p.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
tools = json.loads(p.stdout.readline())["result"]["tools"]
time.sleep(1.0)
def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1])
    return 0
def children(pid):
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try: out += [int(c) for c in open(f"/proc/{pid}/task/{t}/children").read().split()]
        except FileNotFoundError: pass
    return out
kids = children(p.pid)
total = rss(p.pid) + sum(rss(c) for c in kids)
print(f"{' '.join(extra) or 'cache'}: {len(tools)} tools listed, {len(kids)} plugin processes, host {rss(p.pid)} KiB, host+children {total} KiB")
p.stdin.close(); p.wait()
