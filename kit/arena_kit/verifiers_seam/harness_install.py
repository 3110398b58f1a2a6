"""verifiers' harness installs in a read-only box: the baked install is checked, never written to.

verifiers' `ensure_installed` takes a lock file beside the install and, for a non-root agent, ends with
`chmod -R a+rX <install dir>`; both write, so both fail on a read-only root even when the image baked
the install (Arena's harness image bakes Node, claude_code and codex with their `.ready` markers). In a
box whose root is read-only (`LeanDockerRuntime.writable` set) the same check runs without them:
`{ready} || ({install})` as root, which writes nothing when the image holds the install and fails, with
the harness's name, when it does not (a read-only box cannot install anything).
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

__all__ = ["baked_installs_in_read_only_boxes"]

_PATCHED = "__arena_read_only_aware__"


def baked_installs_in_read_only_boxes() -> None:
    """Make `verifiers.v1.harnesses.utils.install.ensure_installed` (and every harness module that
    imported it by name) check, not install, in a read-only box. Idempotent."""
    from verifiers.v1.harnesses.utils import install

    original = install.ensure_installed
    if getattr(original, _PATCHED, False):
        return

    async def ensure_installed(runtime: Any, *, directory: str, install: str, env: dict[str, str], label: str,
                               ready: str | None = None, lock: str | None = None,
                               shell: tuple[str, ...] = ("sh", "-c")) -> None:
        if getattr(runtime, "writable", None) is None:
            await original(runtime, directory=directory, install=install, env=env, label=label,
                           ready=ready, lock=lock, shell=shell)
            return
        script = f"{ready} || ({install})" if ready else install
        result = await runtime.with_user(None).run([*shell, script], env)
        if result.exit_code != 0:
            detail = (result.stderr.strip() or result.stdout.strip())[-500:]
            raise RuntimeError(
                f"{label} is not installed in the image at {shlex.quote(directory)}, and a read-only box cannot "
                f"install it: bake it into the image (`arena images`) or run `[env] docker = \"stock\"` ({detail})"
            )

    setattr(ensure_installed, _PATCHED, True)
    install.ensure_installed = ensure_installed
    for name, module in list(sys.modules.items()):
        if name.startswith("verifiers.v1.harnesses") and getattr(module, "ensure_installed", None) is original:
            module.ensure_installed = ensure_installed  # type: ignore[attr-defined]
