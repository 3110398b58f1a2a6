"""The declared offline adversaries: the classic wrong migrations stay under the miss cap, and the mutation sweep's claim notices a survivor."""

import pytest
import schema_migration
from arena_kit.contract import load_ref
from schema_migration import adversaries
from schema_migration.adversaries import SURVIVOR_CEILING, mutation_survivors, wrong_migrations
from schema_migration.generate import seeds
from schema_migration.score import MISS_CAP

pytestmark = pytest.mark.slow  # each grades dozens of migrations on 2,000 held-out rows


def test_the_declaration_names_both_adversaries():
    declared = {name: load_ref(ref) for name, ref in schema_migration.ENVIRONMENT.adversaries.items()}
    assert declared == {"wrong_migrations": wrong_migrations, "mutation_survivors": mutation_survivors}


@pytest.mark.parametrize("split", ["dev", "test"])
def test_the_best_classic_wrong_migration_of_each_task_stays_under_the_miss_cap_and_the_claim_is_met(split):
    run = wrong_migrations(split, 30)
    assert list(run.rewards) == [f"{split}-{seed}" for seed in seeds(split, 30)]
    assert max(r for rewards in run.rewards.values() for r in rewards) <= MISS_CAP
    assert run.verdict().status == "met", run.verdict().text


def test_the_mutation_sweep_of_a_few_tasks_leaves_no_survivor():
    run = mutation_survivors("test", 2)
    assert run.rewards == {f"test-{seed}": [0.0] for seed in seeds("test", 2)}
    assert run.ceiling == SURVIVOR_CEILING and run.verdict().status != "failed"


def test_a_mutant_that_keeps_its_score_counts_as_a_survivor_unless_it_is_argued_equivalent(monkeypatch):
    # Without the equivalence table, the equivalent mutants (they score 1.0) are survivors.
    monkeypatch.setattr(adversaries, "is_equivalent", lambda outcome: False)
    run = mutation_survivors("dev", 2)
    assert run.rewards == {f"dev-{seed}": [1.0] for seed in seeds("dev", 2)}
