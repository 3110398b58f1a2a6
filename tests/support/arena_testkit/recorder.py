"""A policy wrapper that keeps every observation it was shown (for server tests)."""

from arena_kit.policy import Action, Observation, Policy


class Recorder:
    """Wraps a policy and keeps every observation it was shown."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.seen: list[Observation] = []

    def __call__(self, obs: Observation) -> Action:
        self.seen.append(obs)
        return self.policy(obs)
