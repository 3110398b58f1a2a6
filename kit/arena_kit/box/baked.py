"""Restores the harness runner scripts an image baked under /tmp when a runtime hides that /tmp.

verifiers writes each harness's runner script and its uv lock to `/tmp/vf-scripts` (the runtime's
`scripts_dir`); our images bake them there, synced, so setup downloads nothing. A Prime VM mounts
`/tmp` as an empty tmpfs, which hides them: the harness would resolve its dependencies anew, from
the network, unlocked. The harness image keeps a durable copy in `/opt/vf-scripts`; on the runtimes
known to hide the image's `/tmp`, task setup (which runs before harness setup) copies it back.
"""

from __future__ import annotations

import shlex

import verifiers.v1 as vf

__all__ = ["BAKED_SCRIPTS", "HIDDEN_TMP_RUNTIMES", "restore_command", "restore_baked_scripts"]

BAKED_SCRIPTS = "/opt/vf-scripts"
HIDDEN_TMP_RUNTIMES = ("prime",)
"""Runtimes whose box mounts a fresh /tmp over the image's (verifiers `v1/mcp/launch.py`: Prime VMs).
Containers (docker, podman) see the image's own /tmp: nothing to restore."""


def restore_command(scripts_dir: str, baked: str = BAKED_SCRIPTS) -> str:
    """Copy the baked scripts into `scripts_dir` without overwriting; a no-op for an image without them."""
    src, dst = shlex.quote(baked), shlex.quote(scripts_dir)
    return f"[ -d {src} ] || exit 0; mkdir -p {dst} && cp -an {src}/. {dst}/"


async def restore_baked_scripts(runtime: vf.Runtime, agent_user: str | None = None) -> None:
    """Copy the image's baked runner scripts back under the runtime's scripts dir, where needed, and
    under `agent_user`'s own (`<scripts dir>-<user>`, handed to it) when the agent is not root.

    Raises:
        vf.SandboxError: the copy failed (the box's /tmp is full or read-only).
    """
    if getattr(runtime.info, "type", None) not in HIDDEN_TMP_RUNTIMES:
        return
    command = restore_command(runtime.scripts_dir)
    if agent_user is not None:
        scripts = f"{runtime.scripts_dir}-{agent_user}"
        command += (
            f" && {{ {restore_command(scripts, f'{BAKED_SCRIPTS}-{agent_user}')}; }}"
            f" && {{ [ ! -d {shlex.quote(scripts)} ] || chown -R {shlex.quote(agent_user)}: {shlex.quote(scripts)}; }}"
        )
    result = await runtime.run(["sh", "-c", command], {})
    if result.exit_code != 0:
        raise vf.SandboxError(
            f"could not restore the baked harness scripts into {runtime.scripts_dir}: {result.stderr.strip()[-500:]}"
        )
