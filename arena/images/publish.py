"""Push every environment image (harness layers with it) to a registry and lock name → digest.

Order matters for "nothing half-written": every input is checked (registry name, environments,
the registry answering) before anything is built or pushed, and the lock is written only after
every push succeeded, by an atomic rename. The prime configs read the lock (`arena_kit.box.image`),
so publishing rewrites no config.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import httpx

from arena.engine import push_image, tag_image, untag_image
from arena.errors import DockerError, PrerequisiteError, UsageError
from arena.images.builder import build_images
from arena.images.lock import PublishedImage, read_lock, write_lock
from arena.images.specs import env_images

__all__ = ["RegistryError", "parse_registry", "publish", "registry_problem"]

Progress = Callable[[str], None]
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST = re.compile(r"(?:localhost|[A-Za-z0-9.-]*[.:][A-Za-z0-9.:-]*|\[[0-9a-fA-F:]+\](?::\d+)?)")
PROBE_TIMEOUT_S = 10.0


class RegistryError(PrerequisiteError):
    """The registry cannot be reached or refused a push (exit 2: the setup, not Arena, must change)."""


def parse_registry(text: str) -> str:
    """`HOST[:PORT][/NAMESPACE...]`, normalised (no trailing slash).

    Raises:
        UsageError: a scheme, a first component that is not a host (Docker would read
            `me/arena` as a Docker Hub namespace), or a namespace Docker cannot name.
    """
    registry = text.strip().rstrip("/")
    if "://" in registry:
        raise UsageError(
            f"--registry {text!r}: give HOST[:PORT]/NAMESPACE without a scheme, e.g. ghcr.io/you or 127.0.0.1:5000/arena"
        )
    host, _, namespace = registry.partition("/")
    if not _HOST.fullmatch(host):
        raise UsageError(
            f"--registry {text!r}: {host!r} is not a registry host (it needs a dot, a port or `localhost`); "
            "for Docker Hub write docker.io/NAMESPACE"
        )
    bad = [part for part in namespace.split("/") if namespace and not _COMPONENT.fullmatch(part)]
    if bad:
        raise UsageError(f"--registry {text!r}: namespace part {bad[0]!r} must be lowercase letters, digits and . _ -")
    return registry


def registry_problem(registry: str) -> str | None:
    """None when the registry's `/v2/` answers over HTTPS or HTTP, else why not (from this host)."""
    host = registry.partition("/")[0]
    reasons = []
    for scheme in ("https", "http"):
        try:
            response = httpx.get(f"{scheme}://{host}/v2/", timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as exc:
            reasons.append(f"{scheme}: {exc or type(exc).__name__}")
            continue
        if response.status_code in (200, 401):  # 401: it is a registry that wants `docker login`
            return None
        return f"{scheme}://{host}/v2/ answered {response.status_code}, so it is not a registry API"
    return "; ".join(reasons)


def _prefixed(progress: Progress, prefix: str) -> Progress:
    return lambda line: progress(prefix + line)


def publish(
    registry: str,
    envs: Sequence[str] | None = None,
    *,
    lock_path: Path,
    base: str | None = None,
    ca_bundle: Path | None = None,
    progress: Progress = print,
) -> list[PublishedImage]:
    """Build (content-hash cached) and push each env image (default: all); then lock each by digest.

    Raises:
        UsageError: bad registry name, unknown environment, a bad lock.
        RegistryError: the registry is unreachable or refused a push.
    """
    registry = parse_registry(registry)
    known = env_images()
    wanted = list(dict.fromkeys(envs)) if envs else list(known)
    unknown = [env for env in wanted if env not in known]
    if unknown:
        raise UsageError(f"unknown environment image(s) {', '.join(unknown)}; known: {', '.join(known) or 'none'}")
    lock = read_lock(lock_path)
    problem = registry_problem(registry)
    if problem:
        raise RegistryError(
            f"registry {registry} is not reachable: {problem}. Fix: check the address, or start the registry, then re-run"
        )

    built = {r.name: r for r in build_images(wanted, base=base, ca_bundle=ca_bundle, progress=progress)}
    published = []
    started = time.monotonic()
    for index, env in enumerate(wanted, 1):
        result = built[env]
        target = f"{registry}/{env}:{result.content_hash}"
        progress(
            f"[push {index}/{len(wanted)}] {env}: {result.tag} → {target} ({result.size_bytes / 1e6:.0f} MB unpacked)"
        )
        pushed_at = datetime.now(UTC)
        began = time.monotonic()
        tag_image(result.tag, target)
        try:
            digest = push_image(target, on_status=_prefixed(progress, f"    {env}: "))
        except DockerError as exc:
            untag_image(target)  # the tag named a push that did not happen
            raise RegistryError(
                f"{exc}. Fix: check that you may push to {registry} (`docker login {registry.partition('/')[0]}`), then re-run"
            ) from exc
        published.append(
            PublishedImage(
                env=env,
                local_tag=result.tag,
                content_hash=result.content_hash,
                registry=registry,
                ref=f"{registry}/{env}@{digest}",
                pushed_at=pushed_at,
            )
        )
        progress(f"[push {index}/{len(wanted)}] {env}: {published[-1].ref} ({time.monotonic() - began:.1f}s)")
    progress(f"pushed {len(published)} image(s) in {time.monotonic() - started:.1f}s")

    write_lock(lock_path, lock.merged(published))
    progress(f"lock: {lock_path}")
    return published
