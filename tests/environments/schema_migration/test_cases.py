"""The rules as value classes (issue 38): every rule names classes, every class has rows in every held-out database, and no held-out class row is in the visible sample."""

from pathlib import Path

import pytest
from schema_migration.cases import CLASS_ROWS, members
from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import seeds, spec, visible_rows, world_rows
from schema_migration.heldout import key as heldout_key
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.rules_table import markdown, readme_specs

SEEDS = [seed for split in ("dev", "test") for seed in seeds(split, 3 * len(FAMILIES))]
MIN_ROWS = 3
"""Rows of each class in every held-out database at least (each class adds `CLASS_ROWS`)."""


@pytest.mark.parametrize("seed", SEEDS)
def test_every_rule_has_a_class_and_every_class_rows_in_the_heldout_database(seed):
    s = spec(seed)
    family = BY_NAME[s.family]
    rules = family.rules_table(s.params)
    assert rules and all(rule.classes for rule in rules), [rule.text for rule in rules if not rule.classes]
    names = [cls.name for rule in rules for cls in rule.classes]
    assert len(names) == len(set(names)), "a class name twice: the per-class checks would merge them"
    found = members(family, s.params, heldout_rows(s))
    empty = {name: len(keys) for name, (_, keys) in found.items() if len(keys) < MIN_ROWS}
    assert not empty, empty


@pytest.mark.parametrize("family", sorted(f.name for f in FAMILIES))
def test_every_class_row_the_generator_makes_is_a_member_of_its_class(family):
    """The maker and the predicate of a class agree: the predicate is the class, not the maker's bookkeeping."""
    s = spec(next(seed for seed in SEEDS if spec(seed).family == family))
    rules = BY_NAME[family].rules_table(s.params)
    found = members(BY_NAME[family], s.params, heldout_rows(s))
    for rule in rules:
        for cls in rule.classes:
            assert len(found[cls.name][1]) >= min(CLASS_ROWS, MIN_ROWS), cls.name


def test_a_family_with_whole_database_classes_gets_its_extra_database():
    s = spec(next(seed for seed in SEEDS if spec(seed).family == "add_fk_orphans"))
    [(name, rows)] = world_rows(s, key=heldout_key(s.seed))
    p = s.params
    parents = {r[0] for r in rows[p["parent"]]}
    assert "no orphan" in name and rows[p["child"]]
    assert all(r[1] is None or r[1] in parents for r in rows[p["child"]])
    heldout = heldout_rows(s)
    assert any(r[1] is not None and r[1] not in {q[0] for q in heldout[p["parent"]]} for r in heldout[p["child"]])


@pytest.mark.parametrize("seed", SEEDS[: len(FAMILIES)])
def test_the_visible_sample_holds_no_class_row_of_the_heldout_database(seed):
    """House rule 1: class rows are made for the held-out database only (other ids, other stream)."""
    s = spec(seed)
    heldout, visible = heldout_rows(s), visible_rows(s)
    for table in s.touched:
        assert not {r[0] for r in heldout[table]} & {r[0] for r in visible[table]}
        assert not {r[1:] for r in heldout[table]} >= {r[1:] for r in visible[table]}


def test_the_readme_shows_the_rule_to_class_table_the_code_has():
    """Regenerate with `python -m schema_migration.rules_table` when a rule or class changes."""
    readme = (Path(__file__).parents[3] / "environments" / "schema_migration" / "README.md").read_text()
    assert markdown(readme_specs()) in readme
