"""Held-out data keyed by the host's task secret: a recovered public seed regenerates none of what the grader uses."""

import asyncio
from types import SimpleNamespace

import pytest
from arena_kit import task_secret
from arena_kit.errors import SecretMismatch
from schema_migration import dbfile, heldout, taskset
from schema_migration.families import FAMILIES
from schema_migration.generate import heldout_rows, seeds, spec, world_rows
from schema_migration.prepared import prepared
from schema_migration.taskset import SchemaMigrationConfig, SchemaMigrationTaskConfig, SchemaMigrationTaskset
from sqlite_sandbox.state import SandboxState

N = 200
FIRST = {spec(seed).family: seed for seed in seeds("dev", len(FAMILIES))}


def _graded_rows(monkeypatch: pytest.MonkeyPatch, seed: int) -> tuple[dict, int]:
    """The held-out rows and key the taskset's reward hands the grader for task `seed`."""
    seen: dict = {}

    def spy(sql, s, rows=None, limits=None, key=None):
        seen.update(rows=rows, key=key)
        return SimpleNamespace(score=1.0, reason="spied", stage="checked")

    monkeypatch.setattr(taskset, "grade", spy)
    config = SchemaMigrationConfig(
        id="schema-migration", split="dev", num_tasks=len(FAMILIES), task=SchemaMigrationTaskConfig(heldout_rows=N)
    )
    [task] = [t for t in SchemaMigrationTaskset(config) if t.data.seed == seed]
    trace = SimpleNamespace(state=SandboxState(submission="SELECT 1;", statements_used=2), info={})
    asyncio.run(task.migration(trace))
    assert trace.info["task_secret"] == task_secret.fingerprint() == task.data.task_secret
    return seen["rows"], seen["key"]


@pytest.mark.parametrize("family", sorted(FIRST))
def test_the_public_seed_does_not_regenerate_the_rows_the_grader_uses(monkeypatch, family):
    seed = FIRST[family]
    s = spec(seed)
    graded, key = _graded_rows(monkeypatch, seed)
    # Control: the same secret rebuilds them exactly.
    assert heldout.rows(s, N) == graded and heldout_rows(s, N, key=key) == graded
    # An agent with the public generator and the recovered seed (as the old code drew them) cannot.
    assert heldout_rows(s, N, key=seed) != graded
    # Nor can a host with another secret.
    monkeypatch.setenv(task_secret.ENV, "another host's secret")
    other = heldout.rows(s, N)
    assert other != graded
    main = max(s.touched, key=lambda name: len(graded[name]))
    assert not {row[1:] for row in other[main]} >= {row[1:] for row in graded[main]}


def test_the_extra_heldout_database_comes_from_the_secret_too():
    s = spec(FIRST["add_fk_orphans"])
    key = heldout.key(s.seed)
    p = prepared(s, heldout.rows(s, N), key)
    [(name, rows)] = world_rows(s, key=key)
    assert p.worlds[1].name == name and p.worlds[1].db == dbfile.to_bytes(s.source, rows)
    [(_, public)] = world_rows(s, key=s.seed)
    assert p.worlds[1].db != dbfile.to_bytes(s.source, public)


def test_the_grader_and_the_leak_watch_use_the_same_secret_rows():
    s = spec(FIRST["split_column"])
    watched = taskset.heldout_secrets(s.seed, N)
    text = {v for rows in heldout.rows(s, N).values() for row in rows for v in row if isinstance(v, str)}
    public = {v for rows in heldout_rows(s, N, key=s.seed).values() for row in rows for v in row if isinstance(v, str)}
    assert watched and set(watched) <= text and not set(watched) <= public


def test_a_task_made_under_another_secret_is_refused_not_graded_against_other_rows(monkeypatch):
    """Scored on a host with another secret, the held-out rows would be drawn anew: another task's grade."""
    [task] = list(SchemaMigrationTaskset(SchemaMigrationConfig(id="schema-migration", split="dev", num_tasks=1)))
    trace = SimpleNamespace(state=SandboxState(submission="SELECT 1;", statements_used=2), info={})
    made_by = task.data.task_secret
    monkeypatch.setenv(task_secret.ENV, "another host's secret")
    pattern = f"{task.data.id}.*{made_by}.*{task_secret.fingerprint()}.*{task_secret.ENV}"
    with pytest.raises(SecretMismatch, match=pattern):
        asyncio.run(task.migration(trace))
    with pytest.raises(SecretMismatch, match=pattern):
        asyncio.run(task.held_out(trace))
    with pytest.raises(SecretMismatch, match=pattern):
        asyncio.run(task.prepare(trace, runtime=None))
    assert "grade" not in trace.info
