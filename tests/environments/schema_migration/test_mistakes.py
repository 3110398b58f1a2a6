"""The classic wrong migrations: each runs, differs from the reference, and the grader holds it to at most half."""

import statistics
import tempfile
from pathlib import Path

import pytest
from schema_migration import dbfile
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import seeds, spec, visible_rows
from schema_migration.grade import grade
from schema_migration.mistakes import BUILDERS, MISTAKES, wrong_migration
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
    return {m: {seed: grade(wrong_migration(m, spec(seed).family, spec(seed).params), spec(seed)) for seed in SEEDS} for m in MISTAKES}


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.slow
def test_every_wrong_migration_scores_at_most_half_on_the_held_out_rows(grades, mistake):
    scores = {seed: g.score for seed, g in grades[mistake].items()}
    high = {seed: grades[mistake][seed].reason for seed, score in scores.items() if score > 0.5}
    assert not high
    assert statistics.mean(scores.values()) <= 0.5


@pytest.mark.parametrize("mistake", MISTAKES)
@pytest.mark.slow
def test_wrong_migrations_are_graded_not_refused_or_crashed(grades, mistake):
    # They are honest SQL: the grade must come from checking the result (or its integrity).
    assert {g.stage for g in grades[mistake].values()} <= {"checked", "integrity"}


@pytest.mark.parametrize(("mistake", "family"), [("typo", "split_column"), ("no_trim", "no_such_family")])
def test_an_unknown_mistake_or_family_is_a_worded_error(mistake, family):
    with pytest.raises(ValueError, match="unknown mistake|no wrong migrations for family"):
        wrong_migration(mistake, family, {})
