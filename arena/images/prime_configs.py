"""Point prime configs at published digests: rewrite the one `image = "..."` line under
`[env.agent.runtime]` and nothing else (a line edit, so comments and layout survive; a TOML
round trip through a library would drop them).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from arena.errors import UsageError

__all__ = ["RUNTIME_TABLE", "prime_configs", "rewrite_runtime_image"]

RUNTIME_TABLE = "env.agent.runtime"
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")
_IMAGE = re.compile(r'^(?P<head>\s*image\s*=\s*)"(?P<value>[^"\\]*)"(?P<tail>\s*(#.*)?)$')


def prime_configs(configs: Path, env: str) -> list[Path]:
    """`<configs>/<env>-*-prime.toml`, sorted."""
    return sorted(configs.glob(f"{env}-*-prime.toml"))


def rewrite_runtime_image(text: str, ref: str, source: str) -> str:
    """`text` with the value of its one `image = "..."` line under `[env.agent.runtime]` set to `ref`.

    Raises:
        UsageError: `source` (named in the message) has no such line, or more than one, or the
            edit changed anything but that value.
    """
    lines = text.splitlines(keepends=True)
    table = ""
    hits: list[int] = []
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            table = header.group(1)[1:] + header.group(2).replace(" ", "")  # `[[x]]` is never the runtime table
        elif table == RUNTIME_TABLE and _IMAGE.match(line.rstrip("\r\n")):
            hits.append(index)
    if len(hits) != 1:
        raise UsageError(
            f"{source}: expected exactly one `image = \"...\"` line under [{RUNTIME_TABLE}], found {len(hits)}; "
            "fix the config (or run publish without --update-configs)"
        )
    [index] = hits
    body = lines[index].rstrip("\r\n")
    ending = lines[index][len(body):]
    match = _IMAGE.match(body)
    assert match is not None
    lines[index] = f'{match.group("head")}"{ref}"{match.group("tail")}{ending}'
    new = "".join(lines)
    _check_only_the_image_changed(text, new, ref, source)
    return new


def _check_only_the_image_changed(old: str, new: str, ref: str, source: str) -> None:
    try:
        before, after = tomllib.loads(old), tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{source} is not valid TOML ({exc}); fix it, then re-run") from None
    if _runtime(after, source).get("image") != ref:
        raise UsageError(f"{source}: the `image` line is not the [{RUNTIME_TABLE}] image TOML reads; fix the config")
    _runtime(before, source)["image"] = ref
    if before != after:
        raise UsageError(f"{source}: rewriting the image line changed other values; fix the config")


def _runtime(config: dict[str, Any], source: str) -> dict[str, Any]:
    node: Any = config
    for key in RUNTIME_TABLE.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        raise UsageError(f"{source} has no [{RUNTIME_TABLE}] table")
    return node
