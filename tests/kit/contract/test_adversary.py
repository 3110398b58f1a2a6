"""An adversary's claim is decided like a gate rule: met, failed, or undecided at too few tasks."""

from __future__ import annotations

import pytest

from arena_kit.contract import AdversaryRun


@pytest.mark.parametrize(("tasks", "reward", "status"), [(40, 0.0, "met"), (40, 1.0, "failed"), (3, 0.0, "undecided")])
def test_the_claim_is_decided_by_the_upper_bound(tasks: int, reward: float, status: str) -> None:
    run = AdversaryRun(claim="scores at most 0.1", ceiling=0.1, rewards={f"t{i}": [reward] for i in range(tasks)})
    assert run.verdict().status == status
