"""The mutation sweep: sqlglot operators make single edits, every runnable non-equivalent mutant of one task per family scores <= 0.5, and each equivalent one is argued and shown identical on an adversarial dataset."""

import functools

import pytest
import sqlglot
from arena_kit.adversaries.mutation.adequacy import tally
from arena_kit.adversaries.mutation.equivalence import key_matches, matches
from arena_kit.adversaries.mutation.sweep import KILL_AT
from schema_migration.families import BY_NAME, FAMILIES, check_repair, json_fields
from schema_migration.generate import spec
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.grade import grade
from schema_migration.mutants.adversary import adversary
from schema_migration.mutants.build import mutants, parse, render
from schema_migration.mutants.equivalent import EQUIVALENT, is_equivalent
from schema_migration.mutants.careless import CARELESS, guards
from schema_migration.mutants.operators import OPERATORS, apply, edits
from schema_migration.mutants.sweep import family_seeds, sweep

pytestmark = pytest.mark.slow  # sweeps of graded migrations: > 1 s of CPU each module

ENTRY_SEEDS = [seed for split in ("dev", "test") for seed in family_seeds(split, 3)]
"""The seeds the gate sweeps (3 dev and 3 test per family): every table entry must name a mutant of one of them."""


def _variants(sql: str, operator: str) -> list[str]:
    tree = sqlglot.parse_one(sql, read="sqlite")
    return [
        apply(tree, k, v).sql(dialect="sqlite") for op, k, v in edits(tree, OPERATORS + CARELESS) if op.name == operator
    ]


def test_operators_edit_the_syntax_tree_one_node_at_a_time():
    assert _variants("SELECT trim(a) FROM t", "trim_side") == ["SELECT LTRIM(a) FROM t", "SELECT RTRIM(a) FROM t"]
    assert _variants("SELECT a FROM t WHERE a <= 100", "integer_pm1") == [
        "SELECT a FROM t WHERE a <= 99",
        "SELECT a FROM t WHERE a <= 101",
    ]
    assert _variants("SELECT a NOT GLOB '*[^0-9]*'", "char_class") == [
        "SELECT NOT a GLOB '*[^0-8]*'",
        "SELECT NOT a GLOB '*[^1-9]*'",
    ]
    assert _variants("CREATE TABLE c (p INTEGER REFERENCES t(id))", "on_delete")[0].endswith(
        "REFERENCES t (id) ON DELETE CASCADE)"
    )
    assert _variants("SELECT CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END", "case_branches") == [
        "SELECT CASE WHEN a THEN 2 WHEN b THEN 1 ELSE 3 END",
        "SELECT CASE WHEN a THEN 1 WHEN b THEN 3 ELSE 2 END",
    ]
    # a quoted string that looks like SQL is a literal, not a place to edit
    assert _variants("SELECT 'a < b'", "comparison") == []


def test_the_careless_agent_operators_misread_a_rule_each():
    assert _variants("SELECT trim(a) FROM t", "trim_whitespace") == [
        "SELECT TRIM(a, ' ' || CHAR(9) || CHAR(10) || CHAR(13) || CHAR(160)) FROM t"
    ]
    assert _variants("CREATE INDEX i ON t(a)", "unique_index") == ["CREATE UNIQUE INDEX i ON t(a)"]
    assert _variants("CREATE INDEX i ON t(a)", "nocase") == ["CREATE INDEX i ON t(a COLLATE NOCASE)"]
    assert _variants("INSERT INTO n (a) SELECT b FROM t", "fold_case") == ["INSERT INTO n (a) SELECT LOWER(b) FROM t"]
    assert _variants("UPDATE t SET a = b", "blank_to_null") == ["UPDATE t SET a = NULLIF(b, '')"]
    assert _variants("INSERT INTO n (a) SELECT b FROM t", "date_fallback") == [
        "INSERT INTO n (a) SELECT COALESCE(DATE(b), b) FROM t"
    ]
    assert _variants("CREATE TABLE t (q INTEGER CHECK (q >= 0 AND q <= 5))", "drop_conjunct") == [
        "CREATE TABLE t (q INTEGER CHECK (q >= 0))",
        "CREATE TABLE t (q INTEGER CHECK (q <= 5))",
    ]
    assert _variants("CREATE TABLE t (q INTEGER CHECK (q >= 0))", "typeof_check") == [
        "CREATE TABLE t (q INTEGER CHECK ((q >= 0) AND TYPEOF(q) = 'integer'))"
    ]
    assert _variants("CREATE TABLE t (q REAL CHECK (q <= 1))", "round_operand") == [
        "CREATE TABLE t (q REAL CHECK (ROUND(q, 2) <= 1))"
    ]
    assert _variants("SELECT a GLOB '*[^0-9]*'", "anchor_pattern") == [
        "SELECT a GLOB '*[^0-9]'",
        "SELECT a GLOB '[^0-9]*'",
    ]
    assert _variants("SELECT a GLOB '*[^0-9]*'", "widen_class") == [
        "SELECT a GLOB '*[^+0-9]*'",
        "SELECT a GLOB '*[^ 0-9]*'",
    ]
    assert _variants("CREATE TABLE t (a TEXT, b TEXT NOT NULL)", "add_not_null") == [
        "CREATE TABLE t (a TEXT NOT NULL, b TEXT NOT NULL)"
    ]
    assert _variants("SELECT CAST(a || '00' AS INTEGER), CAST(b AS INTEGER)", "through_real") == [
        "SELECT CAST(ROUND(CAST(a || '00' AS REAL)) AS INTEGER), CAST(b AS INTEGER)",
        "SELECT CAST(a || '00' AS INTEGER), CAST(ROUND(CAST(b AS REAL)) AS INTEGER)",
    ]
    placeholder = [sqlglot.parse_one(sql, read="sqlite") for sql in (
        "INSERT INTO p (id) VALUES (0)", "INSERT INTO c2 SELECT id, CASE WHEN f IS NULL OR f IN (SELECT id FROM p) THEN f ELSE 0 END FROM c")]  # fmt: skip
    [(index, guarded, _)] = guards(placeholder)
    assert (
        index == 0
        and guarded.sql(dialect="sqlite")
        == "INSERT INTO p (id) SELECT 0 WHERE EXISTS(SELECT 1 FROM c WHERE NOT (f IS NULL OR f IN (SELECT id FROM p)))"
    )


@pytest.mark.slow
def test_there_are_at_least_ten_careless_operator_classes_beside_the_syntactic_ones_and_each_applies_somewhere():
    used = {m.operator for seed in ENTRY_SEEDS for m in mutants(spec(seed))}
    assert len(OPERATORS) >= 28 and len(CARELESS) + 1 >= 10  # + guard_insert, on the statement list
    assert {op.name for op in CARELESS} | {"guard_insert"} <= used, sorted({op.name for op in CARELESS} - used)


def test_mutants_are_pure_functions_of_the_seed_and_each_differs_from_the_reference():
    s = spec(ENTRY_SEEDS[6])
    first, again = mutants(s), mutants(s)
    assert [(m.key, m.answer) for m in first] == [(m.key, m.answer) for m in again]
    reference = "\n".join(render(tree) for _, tree in parse(BY_NAME[s.family].migration(s.params)))
    assert len({m.answer for m in first}) == len(first) and reference not in {m.answer for m in first}
    assert len({m.key for m in first}) == len(first)


@pytest.mark.slow
def test_one_seed_per_family_leaves_no_non_equivalent_survivor():
    outcomes = [o for task in sweep(family_seeds("dev", 1), jobs=2) for o in task]
    tallies = tally(outcomes, is_equivalent)
    assert {o.family for o in outcomes} == {f.name for f in FAMILIES}
    assert [(o.seed, o.key, o.score) for o in tallies[("all", "all")].survivors] == []
    assert tallies[("all", "all")].killed >= 150


@functools.cache
def _mutants_of(seed: int) -> tuple:
    return tuple(mutants(spec(seed)))


def _mutant(family: str, key: str, params_ok=lambda p: True):
    """The first mutant of the gate's seeds with this key (a listed key ending in * matches its prefix)."""
    for seed in ENTRY_SEEDS:
        s = spec(seed)
        if s.family == family and params_ok(s.params):
            found = [m for m in _mutants_of(seed) if key_matches(key, m.key)]
            if found:
                return s, found[0]
    raise AssertionError(f"no {family} mutant {key!r} among the gate's seeds")


CHAR_CLASS_KEY = "char_class: TRIM(JSON_EXTRACT(payload, '$.user.id')) GLOB '*[^0-9]*' -> TRIM(JSON_EXTRACT(payload, '$.user.id')) GLOB '*[^0-8]*'"
SURVIVORS = [
    (
        "check_repair",
        'integer_pm1: IIF("{rate}" > 1 AND "{rate}" <= 100, "{rate}" / 100.0) -> IIF("{rate}" > 1 AND "{rate}" <= 99, "{rate}" / 100.0)',
        lambda p: p["percent"],
    ),
    ("extract_json", CHAR_CLASS_KEY, lambda p: any(f[1] == "$.user.id" for f in p["fields"])),
]


@pytest.mark.parametrize("family, key, variant", SURVIVORS, ids=["percent-bound-100-to-99", "digit-class-0-9-to-0-8"])
def test_the_two_survivors_named_in_issue_24_are_killed_by_held_out_rows(family, key, variant):
    """On the generator before the fix both scored 1.000: no rate in (99, 100], no numeric text with a 9."""
    s, m = _mutant(family, key, variant)
    assert grade(m.answer, s).score <= KILL_AT


OLD_EDGES = {
    "check_repair": (
        check_repair,
        "RATE_EDGES",
        (None, 0.0, 1.0, 1.0000001, 15.0, 100.0, 100.5, -0.2, 250.0, 7.5, 0.999),
    ),
    "extract_json": (
        json_fields,
        "INTEGER_EDGES",
        (json_fields.MISSING, None, "42", " 0042 ", "4 2", "x1", 5.0, True, -3, "", "\t7", 10**12),
    ),
}


@pytest.mark.parametrize("family, key, variant", SURVIVORS, ids=["percent-bound-100-to-99", "digit-class-0-9-to-0-8"])
def test_with_the_edge_values_before_issue_24_the_value_classes_alone_kill_those_two(family, key, variant, monkeypatch):
    """Issue 24 fixed these by adding edge values; issue 38's classes come from the rules, so they kill
    the two mutants even with the edge values of before (when both scored 1.000)."""
    module, name, old = OLD_EDGES[family]
    monkeypatch.setattr(module, name, old)
    s, m = _mutant(family, key, variant)
    assert grade(m.answer, s).score <= KILL_AT


@pytest.mark.parametrize("family", ["add_fk_orphans", "normalise_lookup"])
def test_a_changed_on_delete_action_fails_the_schema_gate(family):
    """These survived with score 1.000 before the grader compared foreign-key actions."""
    seed = family_seeds("dev", 1, [family])[0]
    changed = [m for m in _mutants_of(seed) if m.operator == "on_delete"]
    assert changed
    for m in changed:
        result = grade(m.answer, spec(seed))
        assert result.score <= KILL_AT, m.key
        assert any("ON DELETE" in name for name in result.failed_checks), result.failed_checks


ENTRIES = [(e, key) for e in EQUIVALENT for key in e.keys]


@pytest.mark.parametrize("entry, key", ENTRIES, ids=[f"{e.family}:{k[:60]}" for e, k in ENTRIES])
@pytest.mark.slow
def test_each_equivalent_mutant_scores_like_the_reference_on_its_adversarial_dataset(entry, key):
    """Every mutant the key covers in the first gate task that has one (a key with * can cover several)."""
    s, _ = _mutant(entry.family, key, lambda p: matches(entry, entry.family, key, p))
    rows = adversary(s)
    want = grade(BY_NAME[s.family].migration(s.params), s, rows)
    assert want.score == 1.0, want.reason
    for m in [m for m in _mutants_of(s.seed) if key_matches(key, m.key)]:
        got = grade(m.answer, s, rows)
        assert (got.score, got.failed_checks) == (want.score, want.failed_checks), (m.key, got.reason)


def test_every_equivalent_entry_has_an_argument_and_no_key_is_listed_twice():
    keys = [(e.family, k, e.when_text) for e in EQUIVALENT for k in e.keys]
    assert len(keys) == len(set(keys))
    assert all(len(e.argument) > 40 for e in EQUIVALENT)
    assert all((e.when is None) == (e.when_text == "") for e in EQUIVALENT)


def test_the_adversaries_are_not_the_held_out_rows():
    s = spec(family_seeds("dev", 1, ["check_repair"])[0])
    assert adversary(s)[s.params["table"]][:50] != heldout_rows(s)[s.params["table"]][:50]


@pytest.mark.parametrize(
    "family, key",
    [
        (
            "unique_dedupe",
            'trim_side: MIN(id) OVER (PARTITION BY LOWER(TRIM("{column}"))) -> MIN(id) OVER (PARTITION BY LOWER(LTRIM("{column}")))',
        ),
        (
            "check_repair",
            'comparison: IIF("{rate}" > 1 AND "{rate}" <= 100, "{rate}" / 100.0) -> IIF("{rate}" >= 1 AND "{rate}" <= 100, "{rate}" / 100.0)',
        ),
        (
            "extract_json",
            "trim_side: TRIM(JSON_EXTRACT(payload, '$.session')) GLOB '*[^0-9]*' -> LTRIM(JSON_EXTRACT(payload, '$.session')) GLOB '*[^0-9]*'",
        ),
    ],
)
def test_the_adversarial_datasets_do_tell_a_non_equivalent_neighbour_apart(family, key):
    """The identical scores above are not for want of teeth: a sibling edit that is wrong scores lower on the same rows."""
    s, m = _mutant(family, key)
    assert not is_equivalent_key(s, m)
    assert grade(m.answer, s, adversary(s)).score <= KILL_AT


def is_equivalent_key(s, m) -> bool:
    return any(matches(e, s.family, m.key, s.params) for e in EQUIVALENT)


def test_the_sweep_as_an_adversary_scores_each_task_by_whether_a_non_equivalent_mutant_survived():
    from schema_migration.mutants.sweep import SURVIVOR_CEILING, mutation_sweep

    run = mutation_sweep("dev", 2)
    assert run.rewards == {"dev-1000000": [0.0], "dev-1000001": [0.0]} and run.ceiling == SURVIVOR_CEILING
    assert run.verdict().status == "undecided"  # 2 tasks cannot bound a 10 % share
