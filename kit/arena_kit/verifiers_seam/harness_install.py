"""verifiers' harness installs and clean-ups in a lean box: the baked install is checked, never written to,
once per image; a box removed after its rollout is not cleaned up first.

verifiers' `ensure_installed` takes a lock file beside the install and, for a non-root agent, ends with
`chmod -R a+rX <install dir>`; both write, so both fail on a read-only root even when the image baked
the install (Arena's harness image bakes Node, claude_code and codex with their `.ready` markers). In a
box whose root is read-only (`LeanDockerRuntime.writable` set) the same check runs without them:
`{ready} || ({install})` as root, which writes nothing when the image holds the install and fails, with
the harness's name, when it does not (a read-only box cannot install anything).

The check is an exec per rollout (Node's and the harness's, two for claude_code and codex), and its answer
is the image's: it runs before the agent, in a fresh box whose root is read-only. So a check that passed
in one box passes in every box of the same image, writable mounts, box env, script and env, and is not
run again in this process, unless its install directory lies in a writable mount (the task's setup
could have written there) or the box mounts a volume (`mounted_image_id`); a check that failed is run
again (and fails again, with its words). Not seen: an install dir reached through a symlink into a
writable mount, or a check that reads a marker under a `HOME` the task points into one (verifiers'
prime_agent); Arena's images have neither, and such a box would fail in its session instead of its setup.

verifiers' `remove_dir`, a harness's `cleanup` of its per-rollout state (claude_code's config dir, codex's
home), is one more exec in a box that `arena_kit.envs.lean.LeanEnv` removes right after the rollout:
skipped in a box marked `removed_after_rollout`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import PurePosixPath
from typing import Any

__all__ = ["lean_harness_installs"]

_PATCHED = "__arena_read_only_aware__"
_PASSED: set[tuple[Any, ...]] = set()
"""Install checks that passed in this process, keyed by everything their answer depends on (`_check_key`)."""


def _check_key(
    runtime: Any, directory: str, shell: tuple[str, ...], script: str, env: dict[str, str]
) -> tuple[Any, ...] | None:
    """What a read-only box's install check answers from: its image, writable mounts, box env, shell,
    script and env. None (the check runs every time): the box's image is not known, or the install
    directory lies in a writable mount, where what the task's setup wrote could change the answer."""
    image = getattr(runtime, "image_id", None)
    install_dir = PurePosixPath(directory)
    if not image or any(
        install_dir == PurePosixPath(m) or PurePosixPath(m) in install_dir.parents for m in runtime.writable
    ):
        return None
    return (
        image,
        tuple(sorted(runtime.writable.items())),
        tuple(sorted(dict(runtime.env).items())),
        directory,
        shell,
        script,
        tuple(sorted(env.items())),
    )


def lean_harness_installs() -> None:
    """Make `verifiers.v1.harnesses.utils.install.ensure_installed` (and every harness module that
    imported it by name) check, not install, in a read-only box, and `remove_dir` skip a box removed after
    its rollout. Idempotent."""
    from verifiers.v1.harnesses.utils import install

    original = install.ensure_installed
    if getattr(original, _PATCHED, False):
        return
    original_remove_dir = install.remove_dir

    async def ensure_installed(
        runtime: Any,
        *,
        directory: str,
        install: str,
        env: dict[str, str],
        label: str,
        ready: str | None = None,
        lock: str | None = None,
        shell: tuple[str, ...] = ("sh", "-c"),
    ) -> None:
        if getattr(runtime, "writable", None) is None:
            await original(
                runtime, directory=directory, install=install, env=env, label=label, ready=ready, lock=lock, shell=shell
            )
            return
        script = f"{ready} || ({install})" if ready else install
        key = _check_key(runtime, directory, shell, script, env)
        if key is not None and key in _PASSED:
            return
        result = await runtime.with_user(None).run([*shell, script], env)
        if result.exit_code == 0 and key is not None:
            _PASSED.add(key)
        if result.exit_code != 0:
            detail = (result.stderr.strip() or result.stdout.strip())[-500:]
            raise RuntimeError(
                f"{label} is not installed in the image at {shlex.quote(directory)}, and a read-only box cannot "
                f'install it: bake it into the image (`arena images`) or run `[env] docker = "stock"` ({detail})'
            )

    async def remove_dir(runtime: Any, path: str, label: str) -> None:
        if not getattr(runtime, "removed_after_rollout", False):
            await original_remove_dir(runtime, path, label)

    setattr(ensure_installed, _PATCHED, True)
    install.ensure_installed, install.remove_dir = ensure_installed, remove_dir
    for name, module in list(sys.modules.items()):
        if name.startswith("verifiers.v1.harnesses"):
            if getattr(module, "ensure_installed", None) is original:
                module.ensure_installed = ensure_installed  # type: ignore[attr-defined]
            if getattr(module, "remove_dir", None) is original_remove_dir:
                module.remove_dir = remove_dir  # type: ignore[attr-defined]
