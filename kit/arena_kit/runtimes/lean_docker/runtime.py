"""A lean docker runtime: verifiers' `DockerRuntime` driven through the Docker Engine API, with no helper containers.

The design decision: a restricted box is created with `network_mode="none"`, so it has no route
out at all, and verifiers' own egress proxy (`EgressProxy`, the same host callbacks and policy as
the stock runtime) listens on a socket the host opens *inside the box's network namespace*
(`setns` in a throwaway thread). That replaces the stock runtime's python probe, its helper
container that passes a listener over a unix socket, and its second helper container that cuts
egress with iptables; every limit (memory, CPUs, PIDs, capabilities, no-new-privileges) is set at
create time, and every exec is one Engine API exchange instead of a `docker` CLI process; a root
read of a regular file is no exec at all (`arena_kit.runtimes.lean_docker.box_files`).
An unrestricted box keeps the stock bridge network and published service port.

A live process (`open_process`, the claude_code and codex ACP runners) is one hijacked exec stream
read on the event loop (`arena_kit.runtimes.lean_docker.process`), so no path of a rollout spawns a `docker` CLI.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shlex
import socket
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import PurePosixPath
from typing import Any

import docker
from verifiers.v1.configs.runtime import NetworkPolicyConfig
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes.base import ProgramResult, RuntimeProcess
from verifiers.v1.runtimes.docker import DockerConfig
from verifiers.v1.runtimes.docker.egress import EgressProxy, NetworkPolicy

from arena_kit.runtimes.lean_docker.engine import (
    CONNECTION_LOST,
    ENGINE_ERRORS,
    HangUp,
    engine_client,
    engine_fault,
    engine_socket,
    exec_sync,
    image_user,
    off_loop,
)
from arena_kit.box.faults import BoxEvidence
from arena_kit.harnesses import acp_runner
from arena_kit.runtimes.agent_uids import UidLease
from arena_kit.runtimes.file_watch import unwatch_box, watch_box
from arena_kit.runtimes.lean_docker.box_create import create_box, ensure_workdir, lean_labels, service_url
from arena_kit.runtimes.lean_docker.box_files import BoxRoot
from arena_kit.runtimes.lean_docker.failures import BoxWitness
from arena_kit.runtimes.lean_docker.hardening import (
    AGENT_UID_LABEL,
    BOX_CAPABILITIES,
    host_limits,
    mounted_image_id,
    own_uid_binds,
    reowned,
)
from arena_kit.runtimes.exec_read import read_by_exec
from arena_kit.runtimes.lean_docker.netns import listener_in_netns
from arena_kit.runtimes.lean_docker import prestart
from arena_kit.runtimes.lean_docker.process import open_engine_process
from arena_kit.verifiers_seam.bounds import BOX_ATTRIBUTE
from arena_kit.verifiers_seam.docker_runtime import ENSURE_UV, SeamDockerRuntime
from arena_kit.verifiers_seam.harness_install import lean_harness_installs

__all__ = ["BOX_CAPABILITIES", "LeanDockerRuntime"]

logger = logging.getLogger(__name__)

BAKED_INTERPRETERS = "/opt/vf-uv/arena-interpreters"
"""Where Arena's harness image records each runner it synced: `<script dir name>/<sha256>` holds the
interpreter `uv python find --script` gave for `<script dir>/<sha256>.py`."""
ROOT_USERS = ("", "0", "root", "0:0", "root:root")


class LeanDockerRuntime(SeamDockerRuntime):
    """verifiers' docker runtime over the Engine API (see the module docstring).

    `pids_limit` is applied at create time; `arena_kit.box.isolation.confine` sees it in
    `created_pids_limit` and skips its `docker update`.
    """

    def __init__(
        self,
        config: DockerConfig,
        name: str | None = None,
        *,
        pids_limit: int | None = None,
        writable: Mapping[str, str] | None = None,
        workdir_owner: str | None = None,
        nofile: int | None = None,
        own_uid: str | None = None,
    ) -> None:
        if config.type != "docker":
            raise ValueError(f"the lean runtime drives docker only, not {config.type!r}; use the stock runtime")
        super().__init__(config, name)
        self.created_pids_limit = pids_limit
        self.created_nofile = nofile  # RLIMIT_NOFILE (soft = hard) of every process in the box; None: the engine's
        self.own_uid = own_uid
        """The user (the image's agent) that gets a uid of the box's own at boot (`agent_uids`) in `agent_uid`
        (a borrowed box's: read off its `AGENT_UID_LABEL`); None: none."""
        self.agent_uid: int | None = None
        self._lease: UidLease | None = None
        self.writable = dict(writable) if writable is not None else None
        """None: the image's root is writable; else the root is read-only and these tmpfs mounts
        (path → mount options) are the box's only writable places."""
        self.created_workdir_owner = workdir_owner if writable is not None else None
        """The user the read-only box's workdir mount belongs to (`arena_kit.box.isolation.confine` skips its chown)."""
        lean_harness_installs()
        self.labels: dict[str, str] = {}
        """Labels besides the run's and the runtime's (a pooled box's pool label)."""
        self._api: docker.APIClient | None = None
        self._listener: socket.socket | None = None
        self._prestarted: prestart.Prestarted | None = None
        """A program started with the box, waiting for its one run (`prestart`); views share it."""
        self._root: BoxRoot | None = None
        """The booted box's files as this host reads them without an exec (`box_files`; None: every read execs)."""
        self._image_user: str | None = None
        """The user the box's execs run as when a view names none (the image's)."""
        self.ran_prestarted = False
        """A harness ran its program in the process `prestart` loaded (`run_prestarted`), not in an exec."""
        self.image_id: str | None = None
        """The engine's id of the image the box was created from, when the box mounts nothing but its
        tmpfs (`boot`, `mounted_image_id`): what a check of its read-only root answers from."""
        self.removed_after_rollout = False
        """Its env removes the box right after its one rollout, so the harness's own clean-up of it is
        skipped (`arena_kit.verifiers_seam.harness_install`)."""

    @classmethod
    @contextlib.asynccontextmanager
    async def borrow(cls, config: DockerConfig, container: str) -> AsyncIterator[LeanDockerRuntime]:
        """A live container someone else owns (a host tool server reaching a rollout's box), driven
        over the Engine API: the lean counterpart of `DockerRuntime.attach` without a proxy. It
        never stops or removes the container.

        Raises:
            SandboxError: the container does not exist or the engine cannot be reached.
        """
        runtime = cls(config)
        runtime.container = container
        runtime.removed = True  # nothing of this handle's may remove what it borrows
        runtime.info.borrowed = True
        try:
            api = (await off_loop(engine_client)).api
            details = await off_loop(api.inspect_container, container)
        except ENGINE_ERRORS as error:
            raise engine_fault("box borrow", error) from error
        runtime._api = api
        owner, _, uid = ((details["Config"].get("Labels") or {}).get(AGENT_UID_LABEL) or "").rpartition(":")
        if owner and uid.isdigit():
            runtime.own_uid, runtime.agent_uid = owner, int(uid)
        runtime.image_env = dict(entry.split("=", 1) for entry in details["Config"]["Env"] or [])
        runtime.config = config.model_copy(
            update={"image": details["Config"]["Image"], "workdir": details["Config"]["WorkingDir"] or "/"}
        )
        runtime.info.id = container
        runtime.info.image = runtime.config.image
        runtime.info.workdir = runtime.config.workdir
        try:
            yield runtime
        finally:
            runtime._api = None

    async def alive(self) -> bool:
        """Whether the engine reports the container running: asked of the engine, not of the box
        (verifiers runs `true` inside it, which a root agent can replace)."""
        return await self._witness().running()

    async def start(self) -> None:
        await self.boot()
        await self.attach()

    async def boot(self) -> None:
        """Create and start the box, up to a listener in its network namespace: everything of `start`
        that binds to no rollout, so a warm pool (`arena_kit.runtimes.lean_docker.pool`) runs it ahead of demand.

        Raises:
            SandboxError: the engine failed the start (`engine_fault`), or the box exited at once.
        """
        if self.config.gpu:
            raise SandboxError(
                f"the lean docker runtime has no GPU support (gpu={self.config.gpu!r}); use the stock runtime"
            )
        # `engine_client` raises EngineUnreachableError, a SandboxError: it leaves `LeanEnv.run` as
        # itself (not wrapped in an EnvError) and `arena.retries` matches it by type.
        api = (await off_loop(engine_client)).api
        self._api = api
        restricted = self.network_restricted
        # Named before creation, so stop()/cleanup() remove a box whose start failed half-way.
        self.container = f"vf-{uuid.uuid4().hex}"
        try:
            user = await off_loop(image_user, api, self.config.image)
            # The engine makes a missing workdir as root: right for a root image, and the stock
            # runtime's own mkdir + chown (one exec) otherwise.
            root = user in ROOT_USERS
            self._image_user = user
            binds = await off_loop(self._own_uid_binds, api) if self.own_uid is not None else []
            container = await off_loop(self._create, api, restricted, root, binds)
        except ENGINE_ERRORS as error:
            raise engine_fault("box start", error) from error
        self.info.id = container["Id"][:12]
        self.image_id = mounted_image_id(container)
        state = container.get("State") or {}
        if not state.get("Running") or not state.get("Pid"):
            # The box's init (`sleep infinity`) is not running: an image without `sleep`, say.
            raise SandboxError(
                f"box start: the box exited at once (exit {state.get('ExitCode')}: {state.get('Error') or 'no error given'})"
            )
        self.image_env = dict(entry.split("=", 1) for entry in container["Config"]["Env"] or [])
        if not root:
            await off_loop(ensure_workdir, api, self.container, str(self.config.workdir), user)
        if not restricted:
            self.service_url = service_url(container)
        self._listener = listener_in_netns(int(container["State"]["Pid"]))
        self._root = BoxRoot.pin(int(container["State"]["Pid"]), str(container["Id"]))
        watch_box(str(container["Id"]), int(container["State"]["Pid"]))  # under the file-table watch, if one runs

    async def attach(self) -> None:
        """Serve verifiers' egress proxy on the listener `boot` opened in the box's namespace: the
        part of `start` a pooled box runs when a rollout claims it, on the rollout's event loop.

        Raises:
            SandboxError: the box was not booted (or its listener was already taken).
        """
        listener, self._listener = self._listener, None
        if listener is None:
            raise SandboxError("the lean docker box is not booted")
        restricted = self.network_restricted
        self.proxy = EgressProxy(
            NetworkPolicy(NetworkPolicyConfig(allow=["*"] if restricted else []), [], allow_non_global=restricted)
        )
        self.proxy.__dict__[BOX_ATTRIBUTE] = self.info.id  # its connection bound stops this box's rollout
        await self.proxy.start(listener=listener)
        # No route out exists from the start, so the proxy is the box's only way out in every phase:
        # exec environments carry the proxy (the stock runtime's post-cut state) from the first exec.
        self.cut = restricted
        logger.info("lean docker: started container %s (image=%s)", self.container, self.config.image)

    def _own_uid_binds(self, api: docker.APIClient) -> list[str]:
        self._lease, binds = own_uid_binds(api, self.config.image, str(self.own_uid), lean_labels())
        self.agent_uid = self._lease.uid
        return binds

    def _engine_user(self) -> str:
        """The user an exec of this view runs as, told the engine: the agent by its box's uid and gid (not its name)."""
        if self.agent_uid is not None and self.user == self.own_uid:
            return f"{self.agent_uid}:{self.agent_uid}"
        return self.user or ""

    def _create(
        self, api: docker.APIClient, restricted: bool, make_workdir: bool, binds: list[str] | None = None
    ) -> dict[str, Any]:
        """The box created and started (`box_create.create_box`) with this runtime's limits, mounts and labels."""
        assert self.container is not None  # named before creation (`boot`)
        limits = host_limits(
            self.config.memory,
            self.config.cpu,
            self.created_pids_limit,
            self.created_nofile,
            binds,
            None
            if self.writable is None
            else {path: reowned(options, self.agent_uid) for path, options in self.writable.items()},
        )
        owned = {AGENT_UID_LABEL: f"{self.own_uid}:{self.agent_uid}"} if self.agent_uid is not None else {}
        return create_box(
            api,
            self.container,
            self.config.image,
            restricted=restricted,
            workdir=self.config.workdir if make_workdir else None,
            limits=limits,
            labels={**self.labels, **owned, **lean_labels()},
            environment=self.env,
            stopped=lambda: self.removed,
        )

    async def expose(self, port: int) -> str:
        if self.network_restricted:
            raise SandboxError(
                "a restricted lean box has no network to publish a port on; serve tools on the host "
                '(shared toolsets) or select the stock runtime with `[env] docker = "stock"`'
            )
        url: str = await super().expose(port)
        return url

    def _exec_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment the stock runtime's `docker exec --env` flags carry (proxy or NO_PROXY).
        Read off verifiers' own argv so the two paths cannot drift apart."""
        argv: list[str] = self.stock_exec_argv(env)
        values = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--env"]
        return dict(value.split("=", 1) for value in values)

    async def _exec_api(
        self, operation: str, argv: list[str], env: dict[str, str], stdin: bytes | None = None
    ) -> tuple[int, bytes, bytes]:
        """One exec; an engine that fails it raises the fault it is (`engine_fault`, "`operation`: ...")."""
        if self._api is None or self.container is None:
            raise SandboxError("the lean docker box is not started")
        hang_up = HangUp()
        try:
            return await off_loop(
                exec_sync,
                self._api,
                self.container,
                argv,
                self._exec_env(env),
                self._engine_user(),
                self.config.workdir,
                stdin,
                hang_up,
            )
        except asyncio.CancelledError:
            hang_up()  # frees the executor thread and the engine connection; the box's process runs on, as on the stock path
            raise
        except ENGINE_ERRORS as error:
            raise await self._witness().engine_failure(operation, error) from error

    def _witness(self) -> BoxWitness:
        """The engine's word on this box, which types a failure in it (`failures`)."""
        return BoxWitness(self._api, self.container, str(self.info.id or ""))

    async def _box_evidence(self) -> BoxEvidence:
        """The engine's and this host's evidence on the box (`arena_kit.verifiers_seam.container_hooks` asks it)."""
        return await self._witness().evidence()

    async def run(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        code, out, err = await self._exec_api("exec", argv, self.process_env(env))
        return ProgramResult(code, out.decode(errors="replace"), err.decode(errors="replace"))

    async def run_program(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        """The harness's main program (verifiers' `run_program`: never replayed); a failure in a box
        the engine reports stopped is `BoxLostError`."""
        return await self._witness().program_result(await self.run(argv, env))

    async def open_process(self, argv: list[str], env: dict[str, str]) -> RuntimeProcess:
        """A live process over the Engine API (`arena_kit.runtimes.lean_docker.process`): no CLI process, the PID read
        off the stream under `START_DEADLINE_S`. It overrides the method `arena.vf_hooks` gates, so
        no start limit applies: nothing polls, so a burst of starts does not multiply engine work.
        An engine reached other than over a unix socket keeps verifiers' CLI path."""
        path = engine_socket()
        if path is None:
            process: RuntimeProcess = await super().open_process(argv, env)
            return process
        if self._api is None or self.container is None:
            raise SandboxError("the lean docker box is not started")
        try:
            return await open_engine_process(
                self._api,
                path,
                self.container,
                argv,
                self._exec_env(self.process_env(env)),
                self._engine_user(),
                self.config.workdir,
            )
        except ENGINE_ERRORS as error:
            raise await self._witness().engine_failure("live process start", error) from error

    async def read_file(self, path: str, max_bytes: int | None = None) -> bytes:
        # A read as root (what the exec would be) of a regular file: straight from the box's root, no
        # exec (`box_files`); any other read, and any the host cannot make so, is the exec's.
        # (A relative path with no workdir configured is the exec's: it resolves from the image's.)
        absolute = path if path.startswith("/") else self.config.workdir and f"{self.config.workdir}/{path}"
        if self._root is not None and absolute and (self.user or self._image_user or "") in ROOT_USERS:
            data = await off_loop(self._root.read, absolute, max_bytes)
            if data is not None:
                return data
        code, out, err = await read_by_exec(lambda argv: self._exec_api(f"read {path!r}", argv, {}), path, max_bytes)
        if code != 0:
            raise await self._witness().in_box_failure(f"read {path!r}: {err.decode(errors='replace').strip()}")
        return out

    async def write(self, path: str, data: bytes) -> None:
        await self._run_after_write(path, data, "", [], {}, operation=f"write {path!r}")

    async def prestart(self, source: bytes, name: str) -> None:
        """Start `source` in the box as this view's user, loaded up to its entry point, for one later
        `run_prestarted` (`arena_kit.runtimes.lean_docker.prestart`).

        Raises:
            SandboxError: the engine failed the start, or the program did not load (the box is unchanged
                but for a failed process; the rollout's harness then runs its exec as before).
        """
        path = engine_socket()
        if path is None or self._api is None or self.container is None:
            raise SandboxError("prestart: the box is not started, or its engine is not reached over a unix socket")
        try:
            # No exec env of its own: the host starts with what every exec of this user starts from (the
            # engine's defaults and the box's env); a run's exec env goes over it as an exec's would.
            # Unwrapped: the host is the exec's process, so the engine's exit code is the program's
            # (a kill signal reads as 128+N, as `arena_kit.box.faults` reads an exec's).
            process = await open_engine_process(
                self._api,
                path,
                self.container,
                ["python3", "-I", "-c", prestart.HOST],
                {},
                self._engine_user(),
                self.config.workdir,
                wrap=False,
            )
        except ENGINE_ERRORS as error:
            raise await self._witness().engine_failure("prestart", error) from error
        try:
            await process.started()
            loaded = await prestart.load(process, source, name, self.user)
        except BaseException:
            with contextlib.suppress(BaseException):
                await process.abort()
            raise
        self._prestarted = loaded

    async def run_prestarted(
        self, source: bytes, path: str, args: list[str], env: dict[str, str]
    ) -> ProgramResult | None:
        """The main program `source` run as `python3 -I path *args` with `env` would run, in the process
        `prestart` loaded, classified as `run_program` classifies it; None (nothing run) when no program
        waits, or it is another source, another user's, or already ended: then run the exec.

        Raises:
            What `run_program` raises for a failed program (`BoxLostError`, the agent's box faults).
        """
        loaded, self._prestarted = self._prestarted, None
        if loaded is None:
            return None
        if (
            loaded.digest != prestart.digest(source)
            or loaded.user != self.user
            or await loaded.process.poll() is not None
        ):
            with contextlib.suppress(Exception):
                await loaded.process.abort()
            return None
        self.ran_prestarted = True
        try:
            result = await prestart.run(
                loaded, path, args, self._exec_env(self.process_env(env)), str(self.config.workdir)
            )
        except CONNECTION_LOST as error:  # the run line did not reach a host that died or lost its stream
            raise await self._witness().engine_failure("prestarted run", error) from error
        if loaded.process.engine_exit_code is None:
            # The stream ended and the engine reports no exit code: the engine's loss, never the agent's
            # kill (the exec path raises the same), whatever `wait` stands in with.
            await loaded.process.kill_orphan()
            raise await self._witness().in_box_failure("prestarted run: the exec stream ended without an exit code")
        return await self._witness().program_result(result)

    async def run_program_with_file(
        self, path: str, data: bytes, argv: list[str], env: dict[str, str]
    ) -> ProgramResult:
        """`write(path, data)` then `run_program(argv, env)` in one exec, one exec fewer per rollout
        (the `arena-bash` runner): the program runs with stdin from /dev/null, as an exec without
        stdin has it. Like `run_program`, never replayed.

        Raises:
            SandboxError: the write failed ("write 'path': <the box's words>"; `argv` did not run)
                or the engine failed the exec (`engine_fault`).
            BoxLostError: the program failed and the engine reports the box stopped or gone.
        """
        return await self._witness().program_result(
            await self._run_after_write(path, data, 'exec "$@" </dev/null', argv, self.process_env(env))
        )

    async def prepare_uv_script(
        self, script: str | bytes, env: dict[str, str] | None = None, *, activate: bool = True
    ) -> list[str]:
        """verifiers' `prepare_uv_script` with its write and its `mv`+`uv sync` in one exec (one exec
        fewer per rollout for the claude_code and codex ACP runners): the same script directory (per
        user), temporary file, command, env and cache, then verifiers' own method builds the argv from
        the cache. verifiers' ACP runner is not prepared at all: Arena's stdlib port runs in its place
        (`arena_kit.harnesses.acp_runner.ARGV`), its source in the argv. A runner the image synced ahead (`BAKED_INTERPRETERS`) skips `uv sync`: uv locks
        its cache even to read it, which a read-only box cannot, and the image already did the work."""
        data = script.encode() if isinstance(script, str) else script
        if acp_runner.replaces(data):
            return list(acp_runner.ARGV)
        digest = hashlib.sha256(data).hexdigest()
        directory = self.scripts_dir if self.user is None else f"{self.scripts_dir}-{self.user}"
        path = f"{directory}/{digest}.py"
        if path not in self.uv_interpreters:
            async with self.uv_script_locks.setdefault(path, asyncio.Lock()):
                if path not in self.uv_interpreters:
                    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
                    baked = shlex.quote(f"{BAKED_INTERPRETERS}/{PurePosixPath(directory).name}/{digest}")
                    sync = (
                        f"{{ {ENSURE_UV}; }} && uv sync --script {shlex.quote(path)} -q --no-config "
                        f"&& uv python find --script {shlex.quote(path)} --no-config"
                    )
                    command = f"mv -f {shlex.quote(tmp)} {shlex.quote(path)} && {{ cat {baked} 2>/dev/null || {{ {sync}; }}; }}"
                    result = await self._run_after_write(
                        tmp, data, command, [], self.process_env({**(env or {}), "UV_OFFLINE": "false"})
                    )
                    if result.exit_code != 0:
                        raise RuntimeError(f"failed to prepare uv script: {result.stderr.strip()[-2000:]}")
                    self.uv_interpreters[path] = result.stdout.strip().splitlines()[-1]
        argv: list[str] = await super().prepare_uv_script(script, env, activate=activate)
        return argv

    async def _run_after_write(
        self, path: str, data: bytes, then: str, argv: list[str], env: dict[str, str], operation: str = "exec"
    ) -> ProgramResult:
        """One exec: `sh` writes its stdin to `path` (making its directory), then runs the shell text
        `then` (`argv` its positional parameters) only if the write succeeded.

        Raises:
            SandboxError: the write failed ("write 'path': <the box's words>"), or the engine failed
                the exec (`engine_fault`).
        """
        parent = shlex.quote(str(PurePosixPath(path).parent))
        # Success is a line only this call knows, first on stdout before `then` runs: nothing in the
        # box can forge a failed write (the program's own stderr and exit code are its result).
        written = f"arena-lean-written-{uuid.uuid4().hex}"
        script = f"mkdir -p {parent} && cat > {shlex.quote(path)} || exit 1; echo {written}; {then}"
        code, out, err = await self._exec_api(operation, ["sh", "-c", script, "sh", *argv], env, stdin=data)
        mark = f"{written}\n".encode()
        if not out.startswith(mark):
            raise await self._witness().in_box_failure(f"write {path!r}: {err.decode(errors='replace').strip()}")
        return ProgramResult(code, out[len(mark) :].decode(errors="replace"), err.decode(errors="replace"))

    async def run_background(self, argv: list[str], env: dict[str, str], log: str) -> None:
        if self._api is None or self.container is None:
            raise SandboxError("the lean docker box is not started")
        if self.network_restricted and self.proxy is not None:
            env = {**env, **self.proxy_env()}
        script = f"exec {shlex.join(argv)} > {shlex.quote(log)} 2>&1 < /dev/null"
        api, container, user, workdir = self._api, self.container, self._engine_user(), self.config.workdir
        environment = self._exec_env(self.process_env(env))

        def detach() -> None:
            exec_id = api.exec_create(
                container, ["sh", "-c", script], environment=environment, user=user or "", workdir=workdir
            )["Id"]
            api.exec_start(exec_id, detach=True)

        try:
            await off_loop(detach)
        except ENGINE_ERRORS as error:
            raise await self._witness().engine_failure("background process start", error) from error

    def cleanup(self) -> None:
        # Not `info.borrowed`: the rollout that borrows this box stamps that flag on the very `info`
        # object, and its owner (this runtime, in `LeanEnv`) must still remove the box.
        if self.container is None or self.removed:
            return
        self.removed = True
        if self.info.id:
            unwatch_box(str(self.info.id))
        if self._root is not None:
            self._root.close()
        if self._listener is not None:  # booted, never attached (a pooled box nobody claimed)
            with contextlib.suppress(OSError):
                self._listener.close()
        logger.debug("lean docker: removing container %s", self.container)
        with contextlib.suppress(Exception):
            (self._api or engine_client().api).remove_container(self.container, force=True)
        if self._lease is not None:
            self._lease.release()  # after the removal: no process of the box runs as the uid any more
