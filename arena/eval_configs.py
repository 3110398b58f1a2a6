"""The `vf-eval` configs in `configs/`, rendered from one source: the installed environments, the harnesses, Arena's retry table.

`vf-eval @ FILE` reads one plain TOML file (pydantic_config has no include), so every config carries
the whole `[env.retries]` table of `arena.retries`; this module writes them all, so that table and
everything else lives once. Three configs per environment and harness:
- `<env>-<harness>.toml`: the docker runtime against the embedded model server (`arena serve`);
- `<env>-<harness>-<provider>.toml`: the same against the real API the harness speaks (`REAL_APIS`);
- `<env>-<harness>-prime.toml`: the prime runtime, against the embedded model server.

Environments are the installed ones (`arena.installed`) whose package is in the checkout's
`environments/`; harnesses are those of `arena.choices.HARNESSES` that verifiers ships (Arena's own
variants run under Arena's commands). The one value kept from a checked-in file is a prime config's
`image`, which `arena images publish --update-configs` points at a pushed digest.

Regenerate after adding an environment or a harness, or changing the retry table:
`python -m arena.eval_configs`; `--check` lists the configs out of step with their source and exits 1.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomli_w

from arena.choices import HARNESSES
from arena.errors import ArenaError, UsageError
from arena.installed import entry_points
from arena.policies import model_name
from arena.retries import retries_table

__all__ = [
    "CONFIG_DIR",
    "EvalConfig",
    "REAL_APIS",
    "RealApi",
    "check",
    "config_harnesses",
    "config_name",
    "eval_configs",
    "expected",
    "main",
    "repo_environments",
    "write",
]

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "configs"
ENVIRONMENTS_DIR = ROOT / "environments"
SERVER_URL = "http://127.0.0.1:8765/v1"
"""`arena serve`'s default address."""
PRIME_IMAGE_PLACEHOLDER = "REGISTRY/NAMESPACE/{env}@sha256:" + "0" * 64
REGENERATE = "python -m arena.eval_configs"
ORACLE = "oracle"
"""The policy a config's scripted model plays by default."""

Kind = Literal["docker", "real", "prime"]


@dataclass(frozen=True)
class RealApi:
    """The API a harness speaks (verifiers' interception forwards it untranslated) and the real model its config names."""

    provider: str
    """The config's suffix: `<env>-<harness>-<provider>.toml`."""
    api: str
    """How the header names the API."""
    model: str
    base_url: str
    api_key_var: str


_OPENAI = {"base_url": "https://api.openai.com/v1", "api_key_var": "OPENAI_API_KEY"}
REAL_APIS: dict[str, RealApi] = {
    "bash": RealApi(provider="openai", api="an OpenAI-compatible chat-completions endpoint", model="gpt-4.1-mini", **_OPENAI),
    "codex": RealApi(provider="openai", api="the OpenAI Responses API", model="gpt-5-mini", **_OPENAI),
    "claude_code": RealApi(
        provider="anthropic", api="the Anthropic Messages API", model="claude-sonnet-4-5",
        base_url="https://api.anthropic.com/v1", api_key_var="ANTHROPIC_API_KEY",
    ),
}


@dataclass(frozen=True)
class EvalConfig:
    """One config file: which environment, harness and kind, and its text."""

    env: str
    harness: str
    kind: Kind
    text: str

    @property
    def name(self) -> str:
        return config_name(self.env, self.harness, self.kind)


def config_name(env: str, harness: str, kind: Kind) -> str:
    suffix = {"docker": "", "real": f"-{_real_api(harness).provider}", "prime": "-prime"}[kind]
    return f"{env}-{harness}{suffix}.toml"


def repo_environments() -> list[str]:
    """Ids of the installed environments whose package is in this checkout's `environments/`, sorted
    (one installed from elsewhere, a scaffold in a temporary folder, gets no config here)."""
    found = set()
    for point in entry_points():
        spec = importlib.util.find_spec(point.module.split(".")[0])
        locations = [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []
        if any(location.is_relative_to(ENVIRONMENTS_DIR) for location in locations):
            found.add(point.name)
    return sorted(found)


def config_harnesses() -> list[str]:
    """The harnesses that get configs: Arena's (`arena.choices.HARNESSES`) that verifiers ships."""
    from verifiers.v1.utils.loaders import builtin_harness_ids

    builtin = set(builtin_harness_ids())
    return [harness for harness in HARNESSES if harness in builtin]


def eval_configs(
    environments: Sequence[str], harnesses: Sequence[str], policies: dict[str, list[str]], prime_images: dict[str, str],
) -> list[EvalConfig]:
    """Every config for `environments` × `harnesses` × kinds.

    `policies` maps each environment to its policy names (its `arena.policies` entry point, in its own
    order); `prime_images` a prime config's file name to the image it keeps (a published digest).

    Raises:
        UsageError: a harness has no entry in `REAL_APIS`, or an environment publishes no oracle.
    """
    made = []
    for env in environments:
        for harness in harnesses:
            for kind in ("docker", "real", "prime"):
                name = config_name(env, harness, kind)
                text = _render(env, harness, kind, policies[env], prime_images.get(name, PRIME_IMAGE_PLACEHOLDER.format(env=env)))
                made.append(EvalConfig(env, harness, kind, text))
    return made


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


def _render(env: str, harness: str, kind: Kind, policies: list[str], prime_image: str) -> str:
    name, docker_name = config_name(env, harness, kind), config_name(env, harness, "docker")
    real = _real_api(harness)
    if ORACLE not in policies:
        raise UsageError(f"environment {env!r} publishes no {ORACLE!r} policy (it has {', '.join(policies) or 'none'}): the configs run it")
    if kind == "docker":
        header = [
            f"{env} with the {harness} harness on the docker runtime, against the embedded model server.",
            f"Start it first: `arena serve` (127.0.0.1:8765); then: ARENA_MODEL_KEY=local vf-eval @ configs/{name}",
            f"The model name picks the scripted policy: arena/{env}/<policy> (`arena probe {env}` runs every one) or arena/staller.",
        ]
    elif kind == "real":
        header = [
            f"{env} with the {harness} harness on the docker runtime, against a real model: {real.api}.",
            f"Differs from configs/{docker_name} only in `model` and [client]. The key stays on the host",
            "(verifiers' interception forwards it upstream; the box sees a per-rollout secret).",
            f"Run: {real.api_key_var}=... vf-eval @ configs/{name}",
        ]
    else:
        header = [
            f"{env} with the {harness} harness on the prime runtime (a remote Prime sandbox), against the embedded",
            f"model server on this host (swap [client]/model for a real model's, as in configs/{config_name(env, harness, 'real')}).",
            "Needs Prime credentials: `prime login` (~/.prime/config.json), which host-side tool servers read too (verifiers",
            "strips *API_KEY* variables from host subprocesses: PRIME_API_KEY alone reaches only the runtime and the tunnels).",
            f"Start `arena serve`, then: ARENA_MODEL_KEY=local vf-eval @ configs/{name}",
        ]
    header.append(f"Generated by `{REGENERATE}` (arena/eval_configs.py, retry rules from arena/retries.py): edit those, not this file.")
    model, client = (real.model, {"base_url": real.base_url, "api_key_var": real.api_key_var}) if kind == "real" else (
        model_name(env, ORACLE), {"base_url": SERVER_URL, "api_key_var": "ARENA_MODEL_KEY"})
    blocks = [
        _block({"model": model, "push": False, "output_dir": "outputs", "num_rollouts": 1, "max_concurrent": 4}, *header),
        _block({"client": client}),
        _block({"select": {"limit": 5}}),
        _block(
            {"env": {"taskset": {"id": env, "split": "test"}}},
            "The held-out split: eval configs score on `test`; `dev` is for development (arena probe/demo pass it explicitly).",
        ),
        _block({"env": {"agent": {"max_turns": 40}}}),
        _block({"env": {"agent": {"harness": {"id": harness}}}}),
        *(_prime_blocks(prime_image) if kind == "prime" else _docker_blocks(env)),
        _block(
            {"env": {"retries": retries_table()}},
            "Infrastructure faults (engine or box lost, harness start missed, model server down) rerun the",
            "episode in a fresh box, whichever docker path it takes, as Arena's own commands do (arena/retries.py);",
            "anything else is the outcome.",
        ),
    ]
    return "\n".join(blocks)


def _docker_blocks(env: str) -> list[str]:
    from arena.images.builder import image_ref
    from arena_kit.isolation import ISOLATION

    return [_block(
        {"env": {"agent": {"runtime": {"type": "docker", "image": image_ref(env)}}}},
        f"Isolation comes from the taskset (arena_kit.isolation): {ISOLATION.memory:g} GB, {ISOLATION.cpu:g} CPU, "
        f"{ISOLATION.pids} PIDs, no egress, a limit per stage.",
        "Override per config: memory/cpu below, [env.agent.timeout] setup/rollout/finalize/scoring (seconds),",
        "[env.taskset.task] pids_limit.",
    )]


def _prime_blocks(image: str) -> list[str]:
    from arena_kit.isolation import ISOLATION

    return [
        _block(
            {"env": {"agent": {"runtime": {"type": "prime", "image": image, "cpu": ISOLATION.cpu, "memory": ISOLATION.memory}}}},
            "Prime's sandbox pulls the image by digest; it must be public (the sandbox request has no registry",
            "credentials). `arena images publish --registry R` rewrites the `image` line below to the pushed digest;",
            "until then it is a placeholder that no registry serves.",
            f"cpu/memory are arena_kit.isolation's ({ISOLATION.cpu:g} CPU, {ISOLATION.memory:g} GB); the taskset's no-egress policy applies as on docker.",
        ),
        _block(
            {"env": {"interception": {"type": "server", "tunnel": {
                "type": "custom", "url": "https://interception.example.invalid", "port": 8766}}}},
            "The box reaches the host's interception server (model traffic) at `url`, a public endpoint you run",
            "(a reverse proxy or tunnel) in front of this host's `port`; no Prime tunnel is opened for it.",
            "The environment's MCP toolset runs on the host (what it holds never enters the box): verifiers",
            "reaches it from the box through a Prime tunnel (prime-tunnel; frpc).",
        ),
    ]


def _installed_sources(directory: Path) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """The environments, their policies and the prime images kept from `directory`'s configs."""
    from arena.policies import PolicyResolver

    environments = repo_environments()
    if not environments:
        raise UsageError(
            f"no environment of this checkout ({ENVIRONMENTS_DIR}) is installed, so no config can be written "
            "(every one would be deleted): run `make install`, then re-run"
        )
    resolver = PolicyResolver()
    policies = {env: resolver.environment_policies(env) for env in environments}
    images = {}
    for path in directory.glob("*-prime.toml"):
        try:
            image = tomllib.loads(path.read_text())["env"]["agent"]["runtime"]["image"]
        except (tomllib.TOMLDecodeError, KeyError, TypeError):
            continue  # not a config this module wrote: regenerated with the placeholder
        if isinstance(image, str):
            images[path.name] = image
    return environments, policies, images


def expected(directory: Path = CONFIG_DIR) -> list[EvalConfig]:
    """What `directory` should hold, from the installed environments and harnesses.

    Raises:
        UsageError: no environment of the checkout is installed, or see `eval_configs`.
        PolicyLoadError: an environment's policies entry point is broken.
    """
    environments, policies, images = _installed_sources(directory)
    return eval_configs(environments, config_harnesses(), policies, images)


def check(directory: Path = CONFIG_DIR, configs: Sequence[EvalConfig] | None = None) -> list[str]:
    """What differs between `directory`'s `*.toml` and `configs` (default: `expected(directory)`), one line each."""
    wanted = {config.name: config.text for config in (expected(directory) if configs is None else configs)}
    problems = []
    for name, text in sorted(wanted.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif path.read_text() != text:
            problems.append(f"{name}: differs from its source")
    problems += [f"{path.name}: no environment and harness make it" for path in sorted(directory.glob("*.toml")) if path.name not in wanted]
    return problems


def write(directory: Path = CONFIG_DIR) -> list[Path]:
    """Write every expected config into `directory` and delete the `*.toml` no source makes; the paths written."""
    configs = expected(directory)
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
    parser = argparse.ArgumentParser(prog=REGENERATE, description="Write configs/ from the installed environments, the harnesses and arena/retries.py.")
    parser.add_argument("--check", action="store_true", help="write nothing; list the configs out of step and exit 1 if any")
    parser.add_argument("--dir", type=Path, default=CONFIG_DIR, help="default: the checkout's configs/")
    args = parser.parse_args(argv)
    try:
        return _check(args.dir) if args.check else _write(args.dir)
    except ArenaError as exc:  # a usage error, or an environment's policies that do not load
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
