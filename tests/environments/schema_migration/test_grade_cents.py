"""Cents are exact for every amount the rule covers: up to 19 digits of cents (the INTEGER limit), where a conversion through REAL (53 bits) goes wrong."""

import re

import pytest
from arena_testkit.exact_integers import assert_exact_pass_and_through_real_fail
from schema_migration.families import BY_NAME
from schema_migration.families.cents import FAMILY, INTEGER_MAX
from schema_migration.generate import spec
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.mutants.sweep import family_seeds

pytestmark = pytest.mark.slow  # graded migrations: > 1 s of CPU

SEEDS = [seed for split in ("dev", "test") for seed in family_seeds(split, 3, ["change_type_cents"])]
THROUGH_REAL = {
    "round": "CAST(round(CAST(clean AS REAL) * 100) AS INTEGER)",
    "cast": "CAST(clean * 100 AS INTEGER)",
    "printf": "printf('%.0f', CAST(clean AS REAL) * 100)",
}
"""Conversions that are exact for every amount below 2**53 cents (all the generator drew before)."""


def _value(sql: str, value: str) -> str:
    """The reference with the value of a number replaced (the one CASE ... THEN value ELSE empty END)."""
    out, n = re.subn(r"THEN (.*) ELSE (0|NULL) END", lambda m: f"THEN {value} ELSE {m.group(2)} END", sql, count=1)
    assert n == 1
    return out


def _exact_by_arithmetic() -> str:
    """Another exact conversion: split at the mark, integer arithmetic, the sign applied last."""
    whole, frac = "substr(u, 1, instr(u || '.', '.') - 1)", "substr(u, instr(u || '.', '.') + 1)"
    unsigned = f"(CAST({whole} AS INTEGER) * 100 + CAST(substr({frac} || '00', 1, 2) AS INTEGER))"
    return f"iif(substr(clean, 1, 1) = '-', -{unsigned}, {unsigned})"


def test_the_seeds_are_three_dev_and_three_test_tasks_of_the_family():
    assert len(SEEDS) == 6 and {spec(seed).family for seed in SEEDS} == {"change_type_cents"}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_heldout_database_has_amounts_of_16_to_19_digits_of_cents_within_integer_range(seed):
    s = spec(seed)
    texts = [r[2] for r in heldout_rows(s)[s.params["table"]]]
    big = [c for c in (FAMILY.cents(s.params, t) for t in texts) if c is not None and abs(c) >= 10**15]
    assert len(big) >= 3 and {len(str(abs(c))) for c in big} == {16, 17, 18, 19}
    assert all(abs(c) <= INTEGER_MAX for c in big) and max(big) == INTEGER_MAX and min(big) == -INTEGER_MAX
    assert any(int(float(c)) != c for c in big)  # REAL cannot hold them


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_and_an_exact_rewrite_score_one_and_every_conversion_through_real_at_most_half(seed):
    s = spec(seed)
    sql = BY_NAME[s.family].migration(s.params)
    assert "REAL" not in sql
    assert_exact_pass_and_through_real_fail(
        s, (sql, _value(sql, _exact_by_arithmetic())), {how: _value(sql, value) for how, value in THROUGH_REAL.items()}
    )


def test_the_prompt_bounds_the_amounts_by_the_integer_limit():
    s = spec(SEEDS[0])
    rules = BY_NAME[s.family].rules(s.params)
    assert "92233720368547758.07 -> 9223372036854775807" in rules and "no amount in the data is larger" in rules
