"""The one place Arena touches verifiers' private names: every underscore name, internal and run-time patch is here.

Everything else in Arena imports verifiers' public names or this seam, and no class of Arena's that
subclasses a verifiers class names, sets or overrides a private name it inherits (`tests/kit/test_verifiers_seam.py`
walks the tree). A verifiers upgrade is: move `VERIFIERS_VERSION`, re-read each row below, run the tests.
Each submodule imports verifiers only when used, so importing this package costs nothing.

| symbol (verifiers 0.4.0) | seam module | why | guard |
|---|---|---|---|
| `ContainerRuntime.open_process` (patched) | `container_hooks` | a burst of ACP harness starts misses verifiers' fixed 5 s PID deadline; a semaphore admits `limit` at once | `arena.vf_hooks` installs it only when `pinned()` |
| `DockerRuntime.alive`, `._read`, `.write` (patched; docker and podman, not Apptainer); `._container`, `._communicate_host`, `._exec` (read) | `container_hooks` | liveness from the engine (`inspect`), not from `true` in a box an agent can replace; `_read` bounded in bytes and time (`bound_box_reads`: a FIFO or `/dev/zero` the agent planted) | only when `pinned()`; a missing name (`LIVENESS_NAMES`) patches nothing and the eval fails closed (`arena.vf_hooks.fail_closed`: the forgeable retry rules dropped) |
| `HarnessSession.turn` (patched); `.runtime`, `.trace` (read) | `container_hooks` | a harness turn that failed by the agent's doing (an OOM kill, its runner killed in a running box) ends typed as the agent's (`arena_kit.box.faults`), on the engine's word | only when `pinned()`; `SeamError` if `turn` or `runtime` is missing (failures then stay `HarnessError`) |
| `mcp.launch._read_back_port`, `mcp.launch._PROBE` (replaced) | `launch` | the tool server's port and readiness polls sleep 1 s; replaced by a 20 ms poll | only when `pinned()` and the source digests match |
| `SubprocessRuntime.run_background` (patched); `._background` (appended) | `launch` | the first host tool server is handed to a process warmed beside vf-eval | only when `pinned()` and the source digest matches |
| `runtimes.docker.cli` (wrapped, for `DockerRuntime.start`'s box `run`), `DockerRuntime.start` (wrapped); `._container`, `._proxy`, `.info` (read) | `stock_box` | the stock box's PIDs limit, ulimits, SysV segments and seccomp profile have no option and cannot change after start; the box it started goes under the file-table watch and its proxy names it | `SeamError` if `start` no longer runs the box through `cli(..., "run", ..., "--detach")` |
| `interception.server.MAX_REQUEST_BODY` (set), `InterceptionServer._handler_for`, `._aux_handler_for` (wrapped), `.sessions` (read); `EgressProxy._handle` (wrapped); a session's `.trace.agent.runtime` (read: the rollout in a box) | `bounds` | one rollout could grow the shared eval process by gigabytes or pin its open files: per-rollout body, in-flight and connection bounds | `SeamError` if a name is missing (`LeanEnv.serving` fails) |
| `InterceptionServer.handle_models` (replaced); `.stack`, `.sessions` (read) | `interception` | a new HTTP client (a new TLS context, ~0.03 CPU-s) per `/v1/models` request; one per server instead | only when `pinned()` and the source digest matches |
| package inits of `verifiers.v1`, `.mcp`, `.tasksets`, `.harnesses`, `.judges` (stood in for) | `package_inits` | they re-export the whole stack; lazy stand-ins import what a process reads | only when pinned and every init is re-exports only (`arena_kit.lazy_init.reexports`) |
| `mcp.server._request_query`, `mcp.server._call_state` | `toolset` | the calling rollout's state route (the per-rollout lock key); a bench binds a call's state | `SeamError` at first use if missing |
| `Toolset._with_state`, `Toolset._state_channel` (overridden, called) | `toolset` | one lock per rollout across pull → call → push (concurrent calls of a rollout were last-write-wins); `HookedToolset.RAISED_AFTER_PUSH`: errors raised only after the call's state is pushed (sqlite_sandbox's charged tool errors) | `SeamError` at class creation if missing |
| `harnesses.utils.install.ensure_installed` (replaced, in its importers too) | `harness_install` | its lock file and `chmod -R` write, so a read-only box could not even check a baked install | the original runs for every box whose root is writable |
| `harnesses.utils.install.remove_dir` (replaced, in its importers too) | `harness_install` | one exec per rollout cleaning a box the lean env removes right after | the original runs for every box not marked `removed_after_rollout` |
| `runtimes.base._ENSURE_UV` | `docker_runtime` | the lean runtime's one-exec `prepare_uv_script` runs the same shell | import fails loudly if it moves |
| `DockerRuntime._container`, `._proxy`, `._cut`, `._stopped`, `._service_url`, `._image_env`, `._uv_interpreters`, `._uv_script_locks`, `._exec`, `._proxy_env` (read, set), `._read` (overridden) | `docker_runtime` | `LeanDockerRuntime` keeps its box's state where verifiers does: it subclasses `SeamDockerRuntime`, which names them `container`, `proxy`, `cut`, `stopped`, `service_url`, `image_env`, `uv_interpreters`, `uv_script_locks`, `stock_exec_argv`, `proxy_env`, and sends `_read` to `read_file` | `check_docker_runtime` at each construction (`SeamError` naming the seam) |
| `Env._warned_resources` | `env` | `LeanEnv` resolves the runtime config as the rollout would, warnings shared | `SeamError` at use |
| `PrimeRuntime._client` (set, `bind_client`) | `prime` | sqlite_sandbox borrows a live Prime sandbox by id | `SeamError` at import if `PrimeRuntime` no longer sets `_client` |
| codex harness `ACP_VERSION` and its `[node, codex-acp]` command | `arena_kit.harnesses.codex` (versions here) | codex-acp's shutdown wait, read on `CODEX_ACP_VERSION` | the command is left as is on any other version |

Where a row is an upstream bug fix or a missing knob, the change is written as a patch against
verifiers 0.4.0 in `docs/upstream/`, indexed (patch, fix, seam it retires) in `docs/upstream/README.md`.
"""

from __future__ import annotations

__all__ = ["CODEX_ACP_VERSION", "VERIFIERS_VERSION", "pinned"]

VERIFIERS_VERSION = "0.4.0"
"""The one verifiers release every row of the table was read against."""
CODEX_ACP_VERSION = "1.12.0"
"""The codex-acp release (installed by verifiers `VERIFIERS_VERSION`) whose shutdown `arena_kit.harnesses.codex` read."""


def pinned() -> bool:
    """Whether the installed verifiers is `VERIFIERS_VERSION` (reads only the package root, not `verifiers.v1`)."""
    import verifiers

    return bool(verifiers.__version__ == VERIFIERS_VERSION)
