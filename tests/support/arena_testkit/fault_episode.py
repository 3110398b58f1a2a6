"""The fault-localisation tests' in-process driver (`fault_localisation.episode`: real Task setup and
scoring, real LogSearchToolset methods, no MCP transport) and the per-knob and per-tier difficulty
tables. The gate table is the package's own: `python -m fault_localisation.gate`."""

from __future__ import annotations

from pathlib import Path

from arena_kit.policy import Policy
from fault_localisation.episode import NO_BOX, Episode, new_trace, run_all, run_episode, split_tasks
from fault_localisation.taskset import FaultLocalisationTask

__all__ = [
    "NO_BOX",
    "Episode",
    "dev_tasks",
    "knob_settings",
    "mean_rewards",
    "new_trace",
    "run_all",
    "run_episode",
    "split_tasks",
]


def dev_tasks(count: int, store_dir: Path, **knobs) -> list[FaultLocalisationTask]:
    return split_tasks("dev", count, store_dir, **knobs)


def mean_rewards(policies: dict[str, Policy], tasks: list[FaultLocalisationTask]) -> dict[str, float]:
    """Each policy's mean reward over `tasks`."""
    return {name: sum(e.reward for e in run_all(policy, tasks)) / len(tasks) for name, policy in policies.items()}


MECHANISM_OFF = {
    "twins": 0,
    "shared_trigger": 0.0,
    "decoys": 0,
    "mimics": 0,
    "echo": 0.0,
    "verbatim_echo": 0.0,
    "callers_first": 0.0,
    "quiet_root": 0.0,
    "precursor": 0.0,
    "off_path": 0.0,
    "stray_reachable": 0.0,
    "traces": False,
}
"""Each mechanism's knob setting that switches it off (the defaults switch each one on)."""
_NEEDS = {"verbatim_echo": "echo", "stray_reachable": "off_path"}
"""A mechanism that refines another needs that one on to show at all."""


def knob_settings() -> dict[str, dict]:
    """The difficulty table's rows: the default mix, each mechanism off alone, every mechanism
    off, and each mechanism alone on (traces stay on there: they help, they are not a trap)."""
    rows: dict[str, dict] = {"default": {}}
    rows |= {f"{name} off": {name: off} for name, off in MECHANISM_OFF.items()}
    traps = {k: v for k, v in MECHANISM_OFF.items() if k != "traces"}
    rows["all traps off"] = dict(traps)
    rows |= {f"only {name}": {k: v for k, v in traps.items() if k not in (name, _NEEDS.get(name))} for name in traps}
    return rows


def main() -> None:
    """`python -m arena_testkit.fault_episode [split] [tasks] --knobs | --difficulty`: the per-knob
    difficulty table (oracle, exhaustive and the shortcuts) or the per-tier one (oracle, every
    shortcut, the investigations), mean rewards in process."""
    import sys
    import tempfile

    from fault_localisation.policies import POLICIES

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    split, count = (args + ["dev"])[0], int((args + ["dev", "50"])[1])
    store = Path(tempfile.mkdtemp(prefix="fl-stores-"))
    if "--difficulty" in sys.argv:
        from fault_localisation.generate import DIFFICULTIES

        names = ["oracle", *(n for n in POLICIES if n.startswith(("shortcut_", "investigate_")))]
        tables = {
            tier: mean_rewards({n: POLICIES[n] for n in names}, split_tasks(split, count, store, difficulty=tier))
            for tier in DIFFICULTIES
        }
        print("| policy | " + " | ".join(DIFFICULTIES) + " |")
        for n in names:
            print(f"| {n} | " + " | ".join(f"{tables[t][n]:.3f}" for t in DIFFICULTIES) + " |", flush=True)
        return
    if "--knobs" not in sys.argv:
        raise SystemExit("pass --knobs or --difficulty (the gate table: python -m fault_localisation.gate)")
    names = ["oracle", "exhaustive", *(n for n in POLICIES if n.startswith("shortcut_"))]
    print("| knobs | " + " | ".join(n.removeprefix("shortcut_") for n in names) + " |")
    for row, knobs in knob_settings().items():
        table = mean_rewards({n: POLICIES[n] for n in names}, split_tasks(split, count, store, **knobs))
        print(f"| {row} | " + " | ".join(f"{table[n]:.2f}" for n in names) + " |", flush=True)


if __name__ == "__main__":
    main()
