"""House rule 1 (graded on what the model did not see): the seed-recovery attack. An agent reads a
task's window and first log lines through the real toolset, runs the public generator over the
split's public seed range, and answers the root cause of the incident whose lines match. Under any
secret but the host's (the bare seed, as tasks were made before the task secret, or a guessed
one) it matches nothing and answers at chance; with the host's secret it recovers every answer,
which shows the attack is real."""

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from itertools import islice

import pytest

from arena_kit import task_secret
from fault_localisation.episode import NO_BOX, call_tool, new_trace, split_tasks
from fault_localisation.generate import Incident, Knobs, Label, generate, iso, split_seeds
from arena_kit.errors import SecretMismatch
from fault_localisation.taskset import FaultLocalisationTask, incident_key, incident_of
from log_search.store import LogLine
from log_search.toolset import LogSearchConfig, LogSearchToolset

TARGETS = 10
"""Tasks attacked: dev#0 to dev#9, whose public seeds lie inside the searched range."""
SEARCHED = split_seeds("dev", 300)
"""The attacker's search: the first 300 public seeds of the split."""
LINES_SEEN = 5
SMALL = {"lines": 2_000}
"""Small incidents keep the stores quick to build; the attack does not depend on their size."""


def _observe(task: FaultLocalisationTask) -> tuple[str, list[str]]:
    """What an agent sees for free and for one query: the window's start and the first log lines."""

    async def go() -> tuple[str, list[str]]:
        trace = new_trace(task)
        await task.setup(trace, runtime=NO_BOX)
        toolset = LogSearchToolset(LogSearchConfig())
        _, listing = await call_tool(toolset, trace.state, "list_services", {})
        window = json.loads(listing)["window"]
        _, found = await call_tool(
            toolset, trace.state, "search_logs", {"start": window["start"], "end": window["end"], "limit": LINES_SEEN}
        )
        return window["start"], json.loads(found)["lines"]

    return asyncio.run(go())


def _first_lines(incident: Incident) -> list[str]:
    return [LogLine(*row).render() for row in islice(incident.rows(), LINES_SEEN)]


class SeedRecovery:
    """The public generator over the searched seeds, each seed turned into a generator key by
    `key_of` (the attacker's guess at how tasks are made)."""

    def __init__(self, key_of: Callable[[int], int], knobs: Knobs) -> None:
        self._by_start: dict[str, list[tuple[int, Incident]]] = {}
        for seed in SEARCHED:
            incident = generate(key_of(seed), knobs)
            self._by_start.setdefault(iso(incident.start_ms), []).append((seed, incident))
        self._fallback = {seed: incident.label for _, pairs in self._by_start.items() for seed, incident in pairs}

    def answer(self, seed: int, start: str, lines: list[str]) -> tuple[bool, Label]:
        """(whether an incident matched the observed lines, the answer): the matching incident's root
        cause, else the best guess left, the attacker's own incident at the task's public seed."""
        for _, incident in self._by_start.get(start, []):
            if _first_lines(incident) == lines:
                return True, incident.label
        return False, self._fallback[seed]


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[FaultLocalisationTask, str, list[str]]]:
    tasks = split_tasks("dev", TARGETS, tmp_path_factory.mktemp("stores"), **SMALL)
    assert all(task.data.seed in SEARCHED for task in tasks)
    return [(task, *_observe(task)) for task in tasks]


def _attack(key_of: Callable[[int], int], observed) -> tuple[int, float]:
    """(incidents matched, share of tasks answered right)."""
    attack = SeedRecovery(key_of, observed[0][0].data.knobs)
    results = [attack.answer(task.data.seed, start, lines) for task, start, lines in observed]
    right = sum(label == task.data.label for (_, label), (task, _, _) in zip(results, observed))
    return sum(matched for matched, _ in results), right / len(observed)


def _majority_baseline(observed) -> float:
    """The share of the most common answer among the attacked tasks: what one fixed guess scores."""
    return max(Counter(task.data.label for task, _, _ in observed).values()) / len(observed)


def _keys_under(secret: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """`incident_key` as a host holding `secret` computes it (the keys drawn at once, then the host's secret restored)."""
    with monkeypatch.context() as patched:
        patched.setenv(task_secret.ENV, secret)
        keys = {seed: incident_key(seed) for seed in SEARCHED}
    return keys.__getitem__


def test_the_tasks_observed_lines_are_real_log_lines(observed):
    for _task, start, lines in observed:
        assert len(lines) == LINES_SEEN and all(line.startswith(start[:13]) for line in lines)


def test_the_bare_seed_attack_matches_no_task_and_answers_at_chance(observed):
    # Tasks made as before the task secret (the generator on the public seed) fall to this: 1.000.
    matched, accuracy = _attack(lambda seed: seed, observed)
    assert matched == 0
    assert accuracy <= _majority_baseline(observed)


def test_an_attack_under_a_guessed_secret_matches_no_task_and_answers_at_chance(observed, monkeypatch):
    matched, accuracy = _attack(_keys_under("an attacker's guess at the secret", monkeypatch), observed)
    assert matched == 0
    assert accuracy <= _majority_baseline(observed)


def test_with_the_hosts_secret_the_same_attack_recovers_every_answer(observed):
    # The control: the attack is real, only the secret stops it.
    assert _majority_baseline(observed) < 0.5
    matched, accuracy = _attack(incident_key, observed)
    assert (matched, accuracy) == (TARGETS, 1.0)


def test_the_task_names_its_secret_by_fingerprint_only(observed):
    secret = task_secret.secret().decode()
    for task, _, _ in observed:
        assert task.data.task_secret == task_secret.fingerprint()
        assert secret not in task.data.model_dump_json()


def test_a_task_made_under_another_secret_is_refused_not_regenerated(observed, monkeypatch):
    task = observed[0][0]
    monkeypatch.setenv(task_secret.ENV, "another host's task secret")
    with pytest.raises(
        SecretMismatch, match=f"{task.data.task_secret}.*{task_secret.fingerprint()}.*ARENA_TASK_SECRET"
    ):
        incident_of(task.data)
