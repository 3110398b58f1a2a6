"""Drive an ACP runner (argv) as verifiers' host does (length-prefixed JSON packets), serve its tool gate,
and print one JSON line per packet answered, then the gate's log. Variant (argv[1]): full, bare, stop, and
claude / claude-stop (verifiers' claude_code config, `scripted_claude.py` as `CLAUDE_CODE_EXECUTABLE`)."""

import http.server
import json
import os
import subprocess
import sys
import threading

variant, runner = sys.argv[1], sys.argv[2:]
decisions = {"c-allow": "allow", "c-deny": "deny", "c-stop": "stop" if variant.endswith("stop") else "deny"}
asked: list[dict] = []


class Gate(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        asked.append(
            {"authorization": self.headers.get("Authorization"), "type": self.headers.get("Content-Type"), **body}
        )
        out = json.dumps({"action": decisions[body["tool_call_id"]]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gate)
threading.Thread(target=server.serve_forever, daemon=True).start()
here = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ)
if variant.startswith("claude"):
    env.update(CLAUDE_CODE_EXECUTABLE=os.path.join(here, "scripted_claude.py"), NODE_OPTIONS="--inspect", DEBUG="1")
process = subprocess.Popen(runner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def exchange(packet: dict) -> None:
    data = json.dumps(packet).encode()
    process.stdin.write(len(data).to_bytes(8, "big") + data)
    process.stdin.flush()
    size = int.from_bytes(process.stdout.read(8), "big")
    print(json.dumps(json.loads(process.stdout.read(size)), sort_keys=True))


agent = os.path.join(here, "scripted_agent.py")
config = {
    "command": [sys.executable, agent],
    "user_contents": ["do the task", [{"type": "text", "text": "part two"}]],
    "mcp_urls": {"tools": "http://127.0.0.1:9/mcp", "more": "http://127.0.0.1:9/more"},
    "mcp_headers": {"tools": {"X-Key": "v"}},
    "system_prompt": "be brief",
    "session_meta": {"claudeCode": {"options": {"strictMcpConfig": True}}},
    "client_capabilities": {"_meta": {"jetbrains": {"air": {"version": 1}}}},
    "tool_interception": {"url": f"http://127.0.0.1:{server.server_address[1]}/tool", "secret": "s3cret"},
}
if variant.startswith("claude"):  # as verifiers' claude_code harness configures its adapter
    config.update(
        command=[
            "/var/tmp/vf-node/bin/node",
            "/var/tmp/vf-claude-agent-acp-2.1.278-0.79.0/packages/node_modules/.bin/claude-agent-acp",
        ],
        system_prompt="",
        client_capabilities={},
        mcp_headers={},
        session_meta={
            "claudeCode": {
                "options": {"strictMcpConfig": True, "disallowedTools": ["WebSearch"], "extraArgs": {"name": "trace-1"}}
            },
            "systemPrompt": {"append": "be brief"},
        },
    )
if variant == "bare":
    config.update(
        mcp_urls={}, mcp_headers={}, system_prompt="", session_meta={}, client_capabilities={}, tool_interception=None
    )
exchange({"id": 1, "operation": "steer", "message": "early"})
exchange({"id": 2, "operation": "prompt", "config": config})
exchange({"id": 3, "operation": "steer", "message": "go on", "message_id": "x"})
exchange({"id": 4, "operation": "prompt", "config": {**config, "user_contents": ["again"]}})
exchange({"id": 5, "operation": "nonsense"})
exchange({"id": 6, "operation": "shutdown"})
process.stdin.close()
print(json.dumps({"exit": process.wait(timeout=60), "gate": asked}, sort_keys=True))
