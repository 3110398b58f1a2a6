"""The classic wrong migrations: each runs, differs from the reference, and the grader holds it to the miss cap (0.25)."""

import statistics
import tempfile
from pathlib import Path

import pytest
from schema_migration import dbfile
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import Spec, seeds, spec, visible_rows
from schema_migration.grade import grade
from schema_migration.mistakes import BUILDERS, MISTAKES, wrong_migration
from schema_migration.score import MISS_CAP
from schema_migration.taskset import FREE_STATEMENTS, STATEMENT_BUDGET, efficiency
from sqlite_sandbox import engine

SEEDS = list(seeds("dev", 20))


def test_every_family_has_every_mistake():
    assert set(BUILDERS) == {f.name for f in FAMILIES}
    s = spec(SEEDS[0])
    assert set(BUILDERS[s.family](s.params)) == set(MISTAKES)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_mistake_runs_on_the_visible_rows_and_is_not_the_reference(seed):
    # An honest agent rehearses before submitting: a wrong migration that errored would be fixed.
    s = spec(seed)
    reference = BY_NAME[s.family].migration(s.params)
    for mistake in MISTAKES:
        sql = wrong_migration(mistake, s.family, s.params)
        assert sql.strip() != reference.strip(), mistake
        with tempfile.TemporaryDirectory() as scratch:
            db = Path(scratch) / "visible.sqlite"
            db.write_bytes(dbfile.to_bytes(s.source, visible_rows(s)))
            reply = engine.execute(str(db), sql)
        assert reply["ok"], (mistake, reply.get("error"), reply.get("sql"))


@pytest.fixture(scope="module")
def grades():
    return {
        m: {seed: grade(wrong_migration(m, spec(seed).family, spec(seed).params), spec(seed)) for seed in SEEDS}
        for m in MISTAKES
    }


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.slow
def test_every_wrong_migration_scores_at_most_the_miss_cap_on_the_held_out_rows(grades, mistake):
    scores = {seed: g.score for seed, g in grades[mistake].items()}
    high = {seed: grades[mistake][seed].reason for seed, score in scores.items() if score > MISS_CAP}
    assert not high
    assert statistics.mean(scores.values()) <= MISS_CAP


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.slow
def test_wrong_migrations_are_graded_not_refused_or_crashed(grades, mistake):
    # They are honest SQL: the grade must come from checking the result (or its integrity).
    assert {g.stage for g in grades[mistake].values()} <= {"checked", "integrity"}


@pytest.mark.parametrize(("mistake", "family"), [("typo", "split_column"), ("no_trim", "no_such_family")])
def test_an_unknown_mistake_or_family_is_a_worded_error(mistake, family):
    with pytest.raises(ValueError, match="unknown mistake|no wrong migrations for family"):
        wrong_migration(mistake, family, {})


def _one_miss_migrations(s: Spec) -> dict[str, str]:
    """Migrations that break one stated requirement of task `s`: the values-only and no-constraint
    shortcuts' SQL, and the reference without each index it creates."""
    reference = BY_NAME[s.family].migration(s.params)
    out = {m: wrong_migration(m, s.family, s.params) for m in ("values_only", "no_constraint")}
    for index in BY_NAME[s.family].schemas(s.params)[1].indexes:
        if index.ddl() in reference:
            out[f"reference without {index.name}"] = reference.replace(index.ddl(), "")
    return out


@pytest.mark.parametrize("family", [f.name for f in FAMILIES])
@pytest.mark.slow
def test_one_missed_requirement_scores_below_every_correct_migration(family):
    # The worst a correct migration earns is its grade (1.0) at the turn counterweight's floor; a
    # migration that breaks a stated rule gets at most half of that, whatever share of checks it passes.
    s = spec(next(seed for seed in seeds("dev", 100) if spec(seed).family == family))
    floor = efficiency(STATEMENT_BUDGET, FREE_STATEMENTS, STATEMENT_BUDGET)
    assert floor == 0.5 and grade(BY_NAME[family].migration(s.params), s).score == 1.0
    for name, sql in _one_miss_migrations(s).items():
        result = grade(sql, s)
        assert result.stage in ("checked", "integrity") and result.score < floor, (name, result.reason)
        assert result.score <= floor / 2, (name, result.reason)
