"""Which episodes a run's mean counts, and what is reported beside it: the tables' (demo, probe,
`arena compare`, their JSON) reading of `arena.traces.Episode.score`, the one place that decides what
an episode contributes.

An episode that ran to a result counts its reward. An episode that failed on a typed infrastructure
fault its retries did not outlast (`Episode.infra_failed`) is no outcome of the agent's: it is left
out of the mean and counted beside it, so the agent is not charged for the machine. Any other failed
episode (verifiers stamped it not ok, the agent ran out its clock, a reward signal gave nothing, the
agent broke its own box) scores 0 and is counted beside the mean as well: the platform cannot tell
the agent blameless, and an agent that hangs on its hardest tasks must not drop them from its mean.
The probe fails a policy with any failed episode (`episodes-ran`), and the demo exits 1. A task with
no scored episode is not in the mean.

The mean is "one mean": each task's mean over its scored episodes, then the mean over tasks
(`arena_kit.gate.stats.estimate`, with its interval). With several rollouts per task the run also
gets pass@k and pass^k, a rollout passing when it earns the full reward (`PASS_REWARD`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arena.traces import Episode, task_rewards
from arena_kit.gate.stats import Estimate, estimate, run_pass_at_k

__all__ = ["MEAN_LEGEND", "PASS_REWARD", "PassK", "RunScores", "score_episodes"]

PASS_REWARD = 1.0
"""A rollout passes (for pass@k and pass^k) when its reward is at least this: the full reward."""
MEAN_LEGEND = (
    "one mean: each task's mean over its scored episodes, then the mean over tasks; "
    "[95 % interval]: Clopper–Pearson for one 0/1 outcome per task, else the betting interval "
    "(valid for any rewards in [0, 1]); a failed episode scores 0, one failed on an infrastructure "
    "fault is left out; both are counted beside the mean"
)


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k (unbiased) over the tasks with at least k scored rollouts."""

    k: int
    at_k: float
    hat_k: float

    def text(self) -> str:
        return f"pass@{self.k} {self.at_k:.3f}  pass^{self.k} {self.hat_k:.3f}"


@dataclass(frozen=True)
class RunScores:
    """A run's scored rewards by task, its one mean, and the episodes reported beside the mean."""

    rewards: dict[str, list[float]]
    """task → the rewards of its scored episodes (in the run's order)."""
    episodes: int
    """Every episode, scored or not."""
    failed: int
    """Failed episodes (see the module): each scores 0, except those in `infra`."""
    infra: int
    """Of `failed`, those that ended on an infrastructure fault: left out of the mean."""
    agent_faults: int
    """Scored episodes the agent ended by breaking its own box (each scored 0)."""
    estimate: Estimate

    @property
    def failure_rate(self) -> float:
        return self.failed / self.episodes if self.episodes else 0.0

    @property
    def pass_k(self) -> PassK | None:
        """At k = the fewest rollouts any task has, when that is at least 2 (None otherwise)."""
        k = min((len(r) for r in self.rewards.values()), default=0)
        if k < 2:
            return None
        at_k = run_pass_at_k(self.rewards, k, PASS_REWARD)
        hat_k = run_pass_at_k(self.rewards, k, PASS_REWARD, every=True)
        return None if at_k is None or hat_k is None else PassK(k, at_k, hat_k)

    def failed_text(self) -> str:
        """`0`, or `1 (25%)`: the failed episodes beside the mean."""
        return f"{self.failed} ({self.failure_rate:.0%})" if self.failed else "0"

    def beside(self) -> str:
        """Everything a reader should see next to the mean: failures, agent faults, pass@k, a note."""
        parts = []
        if self.failed:
            parts.append(
                f"{self.failed} of {self.episodes} episodes failed ({self.failure_rate:.0%}): "
                f"{self.failed - self.infra} scored 0, {self.infra} on an infrastructure fault left out"
            )
        if self.agent_faults:
            parts.append(f"{self.agent_faults} agent fault(s) scored 0")
        if self.pass_k is not None:
            parts.append(self.pass_k.text())
        if self.estimate.note:
            parts.append(self.estimate.note)
        return "; ".join(parts)

    def as_json(self) -> dict[str, object]:
        pass_k = self.pass_k
        return {
            **self.estimate.as_json(),
            "episodes": self.episodes,
            "scored": self.episodes - self.infra,
            "failed": self.failed,
            "failure_rate": self.failure_rate,
            "infra_failed": self.infra,
            "agent_faults": self.agent_faults,
            "pass_k": None
            if pass_k is None
            else {"k": pass_k.k, "pass_at_k": pass_k.at_k, "pass_hat_k": pass_k.hat_k, "pass_reward": PASS_REWARD},
        }


def score_episodes(episodes: Iterable[Episode]) -> RunScores:
    """A run's episodes, scored by `Episode.score` (see the module)."""
    listed = list(episodes)
    return RunScores(
        rewards=task_rewards(listed),
        episodes=len(listed),
        failed=sum(1 for e in listed if e.failed or (e.reward is None and not e.agent_fault)),
        infra=sum(1 for e in listed if e.infra_failed),
        agent_faults=sum(1 for e in listed if e.agent_fault),
        estimate=estimate(task_rewards(listed)),
    )
