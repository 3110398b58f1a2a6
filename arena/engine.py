"""The one Docker boundary: the engine client, Arena's labels, list/remove by label, image lookup,
tag/push/pull, detached containers and docker CLI calls, each with a timeout.

Most calls go through the SDK (`docker_client`). The CLI (`docker_cli`) is kept for what must be
the CLI itself: the bench's floor times `docker run` / `docker exec` exactly as verifiers' docker
runtime invokes them. Failures raise `DockerError` with the engine's message; an unreachable engine
raises `PrerequisiteError` with how to get one.
"""

from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from arena.errors import DockerError, PrerequisiteError

__all__ = [
    "ENGINE_HINT",
    "MANAGED",
    "RUN_LABEL",
    "SESSION_LABEL",
    "CliResult",
    "container_events",
    "docker_cli",
    "docker_client",
    "engine_problem",
    "image_exists",
    "labels",
    "list_containers",
    "pull_image",
    "push_image",
    "remove_containers",
    "start_detached",
    "tag_image",
    "untag_image",
]

ENGINE_HINT = (
    "start one with `images/ensure-docker.sh` (as root on Debian it installs docker.io and starts "
    "dockerd), or start Docker yourself; deselect container tests with -m 'not docker'"
)
MANAGED = "arena.managed=true"
"""Every Arena image carries this label, so every container started from one inherits it."""
RUN_LABEL = "verifiers.run"
"""verifiers labels a rollout's containers with its run id; Arena sets that id to the run name."""
SESSION_LABEL = "arena.session"
"""Containers Arena starts itself also name the session (a bench id) that started them."""
CLI_TIMEOUT_S = 120.0
TRANSFER_TIMEOUT_S = 1800.0
"""A whole push or pull (an env image is about 1.7 GB uncompressed)."""
STALL_TIMEOUT_S = 300
"""Seconds a push or pull may go without a progress message from the engine."""


def engine_problem() -> str | None:
    """None when an engine answers, else a one-line reason."""
    try:
        client = docker.from_env(version="auto", timeout=10)
        client.ping()
        client.close()
    except DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "Permission denied" in reason:
            return f"Docker daemon not reachable (permission denied): add your user to the `docker` group ({reason})"
        return f"Docker daemon not reachable: {reason}"
    return None


@functools.cache
def docker_client() -> docker.DockerClient:
    """A shared client (API version negotiated with the daemon); raises PrerequisiteError."""
    problem = engine_problem()
    if problem:
        raise PrerequisiteError(f"{problem}. Fix: {ENGINE_HINT}")
    return docker.from_env(version="auto", timeout=600)


def labels(session: str, run: str) -> dict[str, str]:
    """The labels of a container Arena starts itself: managed, its session and its run."""
    key, _, value = MANAGED.partition("=")
    return {key: value, SESSION_LABEL: session, RUN_LABEL: run}


def list_containers(run: str | None = None) -> list[str]:
    """Names of Arena containers (of one run, or all), running or not. One removed between the engine's
    listing and its inspect (a removal still under way when a run was killed) is not listed."""
    filters: dict[str, str | list[str] | bool] = {"label": [MANAGED] + ([f"{RUN_LABEL}={run}"] if run else [])}
    return [str(c.name) for c in docker_client().containers.list(all=True, filters=filters, ignore_removed=True)]


def remove_containers(names: Sequence[str]) -> list[str]:
    """Force-remove containers and their anonymous volumes; returns the names this call removed
    (one already gone or being removed is skipped: that is what was wanted).

    Raises:
        DockerError: the engine refused a removal for another reason.
    """
    removed = []
    for name in names:
        try:
            docker_client().containers.get(name).remove(force=True, v=True)
            removed.append(name)
        except NotFound:
            continue
        except APIError as exc:
            if "removal of container" in str(exc) and "already in progress" in str(exc):
                continue
            raise DockerError(f"could not remove container {name}: {exc}; retry with `arena reap --all`") from exc
    return removed


def image_exists(ref: str) -> bool:
    try:
        docker_client().images.get(ref)
    except ImageNotFound:
        return False
    return True


def tag_image(source: str, target: str) -> None:
    """Tag `source` (a tag or id) as `target` (`repository:tag`).

    Raises:
        DockerError: no image `source`, or the engine refused the tag.
    """
    repository, _, tag = target.rpartition(":")
    if not repository or "/" in tag:
        raise DockerError(f"cannot tag {source} as {target!r}: expected REPOSITORY:TAG")
    try:
        if not docker_client().images.get(source).tag(repository, tag):
            raise DockerError(f"the engine did not tag {source} as {target}")
    except ImageNotFound:
        raise DockerError(
            f"cannot tag {source} as {target}: no such image; build it with `arena images build`"
        ) from None
    except APIError as exc:
        raise DockerError(f"cannot tag {source} as {target}: {exc}") from exc


def untag_image(ref: str) -> None:
    """Remove the tag `ref` from an image that keeps at least one other tag (so no layer is deleted).

    Raises:
        DockerError: `ref` is the image's only tag, or the engine refused.
    """
    try:
        image = docker_client().images.get(ref)
        if len(image.tags) < 2:
            raise DockerError(f"will not untag {ref}: it is the image's only tag, so the image itself would go")
        docker_client().images.remove(ref, noprune=True)
    except ImageNotFound:
        return
    except APIError as exc:
        raise DockerError(f"cannot untag {ref}: {exc}") from exc


def push_image(
    ref: str, on_status: Callable[[str], None] = lambda _line: None, timeout: float = TRANSFER_TIMEOUT_S
) -> str:
    """Push `repository:tag` to its registry; returns the manifest digest (`sha256:…`).

    `on_status` gets one line per layer as it finishes ("<layer> Pushed", "<layer> Layer already exists").

    Raises:
        DockerError: the registry refused the push or could not be reached (the engine's message),
            no progress came for STALL_TIMEOUT_S, or the whole push took longer than `timeout`.
    """
    repository, _, tag = ref.rpartition(":")
    digest = ""
    for chunk in _transfer("push", ref, timeout, lambda api: api.push(repository, tag=tag, stream=True, decode=True)):
        status = str(chunk.get("status", ""))
        if status in ("Pushed", "Layer already exists") or status.startswith("Mounted from"):
            on_status(f"{chunk.get('id', '?')} {status}")
        aux = chunk.get("aux")
        if isinstance(aux, dict) and aux.get("Digest"):
            digest = str(aux["Digest"])
    if not digest.startswith("sha256:"):
        raise DockerError(f"push of {ref} ended without a digest from the registry; re-run the push")
    return digest


def pull_image(ref: str, timeout: float = TRANSFER_TIMEOUT_S) -> str:
    """Pull `ref` (`repository:tag` or `repository@sha256:…`); returns the local image id.

    Raises:
        DockerError: the registry refused or could not be reached, or the pull stalled or timed out.
    """
    for _chunk in _transfer("pull", ref, timeout, lambda api: api.pull(ref, stream=True, decode=True)):
        pass
    try:
        return str(docker_client().images.get(ref).id)
    except ImageNotFound:
        raise DockerError(f"pull of {ref} finished but the engine has no such image; re-run the pull") from None


def _transfer(
    verb: str, ref: str, timeout: float, start: Callable[[Any], Iterator[dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    """The decoded progress stream of a push or pull, on a client of its own whose socket timeout
    is the stall limit (the shared client waits 600 s per read); engine errors become DockerError."""
    client = docker.from_env(version="auto", timeout=STALL_TIMEOUT_S)
    deadline = time.monotonic() + timeout
    try:
        for chunk in start(client.api):
            if "error" in chunk or "errorDetail" in chunk:
                detail = chunk.get("errorDetail", {}).get("message") or chunk.get("error")
                raise DockerError(f"{verb} of {ref} failed: {detail}")
            if time.monotonic() > deadline:
                raise DockerError(
                    f"{verb} of {ref} took longer than {timeout:g} s; check the registry and the network, then re-run"
                )
            yield chunk
    except DockerException as exc:
        raise DockerError(f"{verb} of {ref} failed: {exc}") from exc
    except OSError as exc:  # requests' ReadTimeout/ConnectionError are OSErrors: the stream stalled or broke
        raise DockerError(
            f"{verb} of {ref} failed (no progress for {STALL_TIMEOUT_S} s or the engine hung up): {exc}"
        ) from exc
    finally:
        client.close()


def start_detached(
    image: str, command: Sequence[str], container_labels: Mapping[str, str], entrypoint: str | None = None
) -> str:
    """Start a labelled container in the background; returns its id.

    Raises:
        DockerError: the container did not start (the message carries the engine's reason).
    """
    try:
        container = docker_client().containers.run(
            image,
            list(command),
            entrypoint=entrypoint,
            labels=dict(container_labels),
            detach=True,
        )
    except DockerException as exc:
        raise DockerError(
            f"container from {image} did not start: {exc}; check the engine with `docker info` and the "
            "image with `docker image inspect`"
        ) from exc
    return str(container.id)


def container_events(
    filters: Mapping[str, Any], since: int, timeout: float = 60
) -> tuple[Iterator[dict[str, Any]], docker.DockerClient]:
    """A decoded event stream on a client of its own (closing the client ends the stream)."""
    client = docker.from_env(version="auto", timeout=int(timeout))
    return client.events(since=since, filters=dict(filters), decode=True), client


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def error(self) -> str | None:
        """None when the call exited 0, else a one-line reason with the end of stderr."""
        if self.returncode == 0:
            return None
        return f"exit {self.returncode}: {self.stderr.strip()[-300:]}"


def docker_cli(args: Sequence[str], timeout: float = CLI_TIMEOUT_S) -> CliResult:
    """Run `docker ARGS`; past `timeout` the child is killed and the result says so (exit 124)."""
    argv = ["docker", *args]
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return CliResult(124, "", f"timed out after {timeout:g} s: {' '.join(argv[:4])}", time.perf_counter() - started)
    except FileNotFoundError:
        raise PrerequisiteError(f"the docker CLI is not installed. Fix: {ENGINE_HINT}") from None
    return CliResult(done.returncode, done.stdout, done.stderr, time.perf_counter() - started)
