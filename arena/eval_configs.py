"""The `vf-eval` configs in `configs/`, rendered from one source: the harnesses, the APIs they speak, Arena's retry table.

No config names an environment: the taskset is the leading id on the command line
(`vf-eval <env-id> @ configs/bash.toml`), and the box image comes from the environment itself
(`arena_kit.box.image`: a task's `TaskData.image`, which verifiers puts in place of the runtime's
image on docker and prime, and Arena's lean docker path resolves the same way), so adding an
environment adds no config. `vf-eval @ FILE` reads one plain TOML file (pydantic_config has no
include), so every config carries the whole `[env.retries]` table of `arena.retries`; this module
writes them all, so that table and everything else lives once. Three configs per harness:
- `<harness>.toml`: the docker runtime against the embedded model server (`arena serve`);
- `<harness>-<provider>.toml`: the same against the real API the harness speaks (`REAL_APIS`);
- `<harness>-prime.toml`: the prime runtime, against the embedded model server, each environment's
  box pulled by the digest `arena images publish` locks for it (`[env.taskset.task] image_lock`).

Harnesses are those of `arena.choices.HARNESSES` that verifiers ships (Arena's own variants run
under Arena's commands). Regenerate after adding a harness or changing the retry table:
`python -m arena.eval_configs`; `--check` lists the configs out of step with their source and exits 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomli_w

from arena.choices import HARNESSES
from arena.errors import ArenaError, UsageError
from arena.images.lock import DEFAULT_LOCK
from arena.retries import retries_table

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_MODEL",
    "EvalConfig",
    "REAL_APIS",
    "RealApi",
    "check",
    "config_harnesses",
    "config_name",
    "eval_configs",
    "expected",
    "main",
    "write",
]

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "configs"
SERVER_URL = "http://127.0.0.1:8765/v1"
"""`arena serve`'s default address."""
REGENERATE = "python -m arena.eval_configs"
DEFAULT_MODEL = "arena/staller"
"""The scripted model a local config plays unless `-m` names another: the do-nothing floor, the one
policy every environment has (the model server cannot tell which environment a request is for)."""

Kind = Literal["docker", "real", "prime"]
KINDS: tuple[Kind, ...] = ("docker", "real", "prime")


@dataclass(frozen=True)
class RealApi:
    """The API a harness speaks (verifiers' interception forwards it untranslated) and the real model its config names."""

    provider: str
    """The config's suffix: `<harness>-<provider>.toml`."""
    api: str
    """How the header names the API."""
    model: str
    base_url: str
    api_key_var: str


_OPENAI = {"base_url": "https://api.openai.com/v1", "api_key_var": "OPENAI_API_KEY"}
REAL_APIS: dict[str, RealApi] = {
    "bash": RealApi(
        provider="openai", api="an OpenAI-compatible chat-completions endpoint", model="gpt-4.1-mini", **_OPENAI
    ),
    "codex": RealApi(provider="openai", api="the OpenAI Responses API", model="gpt-5-mini", **_OPENAI),
    "claude_code": RealApi(
        provider="anthropic",
        api="the Anthropic Messages API",
        model="claude-sonnet-4-5",
        base_url="https://api.anthropic.com/v1",
        api_key_var="ANTHROPIC_API_KEY",
    ),
}


@dataclass(frozen=True)
class EvalConfig:
    """One config file: which harness and kind, and its text."""

    harness: str
    kind: Kind
    text: str

    @property
    def name(self) -> str:
        return config_name(self.harness, self.kind)


def config_name(harness: str, kind: Kind) -> str:
    suffix = {"docker": "", "real": f"-{_real_api(harness).provider}", "prime": "-prime"}[kind]
    return f"{harness}{suffix}.toml"


def config_harnesses() -> list[str]:
    """The harnesses that get configs: Arena's (`arena.choices.HARNESSES`) that verifiers ships."""
    from verifiers.v1.utils.loaders import builtin_harness_ids

    builtin = set(builtin_harness_ids())
    return [harness for harness in HARNESSES if harness in builtin]


def eval_configs(harnesses: Sequence[str]) -> list[EvalConfig]:
    """Every config for `harnesses` × kinds.

    Raises:
        UsageError: a harness has no entry in `REAL_APIS`.
    """
    return [EvalConfig(harness, kind, _render(harness, kind)) for harness in harnesses for kind in KINDS]


def _real_api(harness: str) -> RealApi:
    try:
        return REAL_APIS[harness]
    except KeyError:
        raise UsageError(
            f"harness {harness!r} has no real API in arena.eval_configs.REAL_APIS: add the API it speaks "
            "(provider, endpoint, key variable, a model), then regenerate the configs"
        ) from None


def _block(table: dict[str, Any], *comment: str) -> str:
    return "".join(f"# {line}\n" for line in comment) + tomli_w.dumps(table)


def _render(harness: str, kind: Kind) -> str:
    name, docker_name = config_name(harness, kind), config_name(harness, "docker")
    real = _real_api(harness)
    pick = f"`-m arena/<env-id>/<policy>` picks a scripted policy (`arena probe <env-id>` runs every one); without it, {DEFAULT_MODEL} (the do-nothing floor)."
    if kind == "docker":
        header = [
            f"Any Arena environment with the {harness} harness on the docker runtime, against the embedded model server.",
            "The box is the environment's own image (arena/<env-id>:latest: `arena images build <env-id>`).",
            f"Start `arena serve` (127.0.0.1:8765), then: ARENA_MODEL_KEY=local vf-eval <env-id> @ configs/{name} -m arena/<env-id>/oracle",
            pick,
        ]
    elif kind == "real":
        header = [
            f"Any Arena environment with the {harness} harness on the docker runtime, against a real model: {real.api}.",
            f"Differs from configs/{docker_name} only in `model` and [client]. The key stays on the host",
            "(verifiers' interception forwards it upstream; the box sees a per-rollout secret).",
            f"Run: {real.api_key_var}=... vf-eval <env-id> @ configs/{name}",
        ]
    else:
        header = [
            f"Any published Arena environment with the {harness} harness on the prime runtime (a remote Prime sandbox), against",
            f"the embedded model server on this host (swap [client]/model for a real model's, as in configs/{config_name(harness, 'real')}).",
            "Needs Prime credentials: `prime login` (~/.prime/config.json), which host-side tool servers read too (verifiers",
            "strips *API_KEY* variables from host subprocesses: PRIME_API_KEY alone reaches only the runtime and the tunnels).",
            f"Start `arena serve`, then, from the checkout: ARENA_MODEL_KEY=local vf-eval <env-id> @ configs/{name} -m arena/<env-id>/oracle",
            pick,
        ]
    header.append(
        f"Generated by `{REGENERATE}` (arena/eval_configs.py, retry rules from arena/retries.py): edit those, not this file."
    )
    model, client = (
        (real.model, {"base_url": real.base_url, "api_key_var": real.api_key_var})
        if kind == "real"
        else (DEFAULT_MODEL, {"base_url": SERVER_URL, "api_key_var": "ARENA_MODEL_KEY"})
    )
    blocks = [
        _block(
            {"model": model, "push": False, "output_dir": "outputs", "num_rollouts": 1, "max_concurrent": 4}, *header
        ),
        _block({"client": client}),
        _block({"select": {"limit": 5}}),
        _block(
            {"env": {"taskset": {"split": "test"}}},
            "The taskset is the leading <env-id> of the command line. The held-out split: eval configs score on `test`;",
            "`dev` is for development (arena probe/demo pass it explicitly).",
        ),
        *(_prime_image_blocks() if kind == "prime" else []),
        _block({"env": {"agent": {"max_turns": 40}}}),
        _block({"env": {"agent": {"harness": {"id": harness}}}}),
        *(_prime_blocks() if kind == "prime" else _docker_blocks()),
        _block(
            {"env": {"retries": retries_table()}},
            "Infrastructure faults (engine or box lost, harness start missed, model server down) rerun the",
            "episode in a fresh box, whichever docker path it takes, as Arena's own commands do (arena/retries.py);",
            "anything else is the outcome.",
        ),
    ]
    return "\n".join(blocks)


def _docker_blocks() -> list[str]:
    from arena_kit.box.isolation import ISOLATION

    return [
        _block(
            {"env": {"agent": {"runtime": {"type": "docker"}}}},
            "No image here: each task names its environment's (arena_kit.box.image), which verifiers puts in place of the",
            'runtime\'s; `[env.taskset.task] image = "..."` runs another.',
            f"Isolation comes from the taskset (arena_kit.box.isolation): {ISOLATION.memory:g} GB, {ISOLATION.cpu:g} CPU, "
            f"{ISOLATION.pids} PIDs, no egress, a limit per stage.",
            "Override per config: memory/cpu below, [env.agent.timeout] setup/rollout/finalize/scoring (seconds),",
            "[env.taskset.task] pids_limit.",
        )
    ]


def _prime_image_blocks() -> list[str]:
    return [
        _block(
            {"env": {"taskset": {"task": {"image_lock": str(DEFAULT_LOCK)}}}},
            "Prime's sandbox pulls the image by digest, and it must be public (the sandbox request has no registry",
            "credentials): each task runs the digest this lock pins for its environment, which `arena images publish",
            "--registry R` writes (relative to the working directory). An environment the lock does not name is refused",
            "when its tasks load, with the command that publishes it.",
        )
    ]


def _prime_blocks() -> list[str]:
    from arena_kit.box.isolation import ISOLATION

    return [
        _block(
            {"env": {"agent": {"runtime": {"type": "prime", "cpu": ISOLATION.cpu, "memory": ISOLATION.memory}}}},
            f"cpu/memory are arena_kit.box.isolation's ({ISOLATION.cpu:g} CPU, {ISOLATION.memory:g} GB); the taskset's no-egress policy applies as on docker.",
            "No image here: the task's (above) replaces the runtime's.",
        ),
        _block(
            {
                "env": {
                    "interception": {
                        "type": "server",
                        "tunnel": {"type": "custom", "url": "https://interception.example.invalid", "port": 8766},
                    }
                }
            },
            "The box reaches the host's interception server (model traffic) at `url`, a public endpoint you run",
            "(a reverse proxy or tunnel) in front of this host's `port`; no Prime tunnel is opened for it.",
            "The environment's MCP toolset runs on the host (what it holds never enters the box): verifiers",
            "reaches it from the box through a Prime tunnel (prime-tunnel; frpc).",
        ),
    ]


def expected() -> list[EvalConfig]:
    """What `configs/` should hold: every config of the harnesses verifiers ships.

    Raises:
        UsageError: see `eval_configs`.
    """
    return eval_configs(config_harnesses())


def check(directory: Path = CONFIG_DIR, configs: Sequence[EvalConfig] | None = None) -> list[str]:
    """What differs between `directory`'s `*.toml` and `configs` (default: `expected()`), one line each."""
    wanted = {config.name: config.text for config in (expected() if configs is None else configs)}
    problems = []
    for name, text in sorted(wanted.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif path.read_text() != text:
            problems.append(f"{name}: differs from its source")
    problems += [
        f"{path.name}: no harness and kind make it"
        for path in sorted(directory.glob("*.toml"))
        if path.name not in wanted
    ]
    return problems


def write(directory: Path = CONFIG_DIR) -> list[Path]:
    """Write every expected config into `directory` and delete the `*.toml` no source makes; the paths written."""
    configs = expected()
    names = {config.name for config in configs}
    for path in directory.glob("*.toml"):
        if path.name not in names:
            path.unlink()
    written = []
    for config in configs:
        path = directory / config.name
        if not path.is_file() or path.read_text() != config.text:
            path.write_text(config.text)
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=REGENERATE, description="Write configs/ from the harnesses, the APIs they speak and arena/retries.py."
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; list the configs out of step and exit 1 if any"
    )
    parser.add_argument("--dir", type=Path, default=CONFIG_DIR, help="default: the checkout's configs/")
    args = parser.parse_args(argv)
    try:
        return _check(args.dir) if args.check else _write(args.dir)
    except ArenaError as exc:  # a harness with no real API
        print(f"{REGENERATE}: {exc}", file=sys.stderr)
        return 2


def _check(directory: Path) -> int:
    problems = check(directory)
    for line in problems:
        print(line)
    if problems:
        print(f"regenerate: {REGENERATE}", file=sys.stderr)
    return 1 if problems else 0


def _write(directory: Path) -> int:
    for path in write(directory):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
