"""JSON digit strings become exact integers for every id the rule covers: up to 19 digits (the INTEGER limit), where a conversion through REAL (53 bits) goes wrong."""

import re

import pytest
from arena_testkit.exact_integers import assert_exact_pass_and_through_real_fail
from schema_migration.families import BY_NAME
from schema_migration.families.cents import INTEGER_MAX
from schema_migration.families.json_fields import BIG_DIGITS, FAMILY, INTEGER_EDGES
from schema_migration.generate import spec
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.mutants.sweep import family_seeds

pytestmark = pytest.mark.slow  # graded migrations: > 1 s of CPU

CAST_DIGITS = re.compile(r"CAST\((trim\(json_extract\(payload, '[$.a-z]+'\)\)) AS INTEGER\)")
"""The reference's conversion of a trimmed digit string (one per INTEGER field)."""


def _with_integer_fields(split: str) -> list[int]:
    pool = family_seeds(split, 6, ["extract_json"])
    return [seed for seed in pool if any(f[2] == "INTEGER" for f in spec(seed).params["fields"])][:3]


SEEDS = _with_integer_fields("dev") + _with_integer_fields("test")
THROUGH_REAL = {
    "round": r"CAST(ROUND(CAST(\1 AS REAL)) AS INTEGER)",
    "real": r"CAST(\1 AS REAL)",
    "printf": r"CAST(printf('%.0f', \1) AS INTEGER)",
}
"""Conversions that are exact for every digit string below 2**53 (all the generator drew before)."""


def _converted(sql: str, replacement: str) -> str:
    out, n = CAST_DIGITS.subn(replacement, sql)
    assert n >= 1
    return out


def test_the_seeds_are_three_dev_and_three_test_tasks_with_an_integer_field():
    assert len(SEEDS) == 6 and {spec(seed).family for seed in SEEDS} == {"extract_json"}
    assert SEEDS[0] == 1000007  # the survivor's task


def test_the_big_ids_span_16_to_19_digits_up_to_the_integer_limit_and_the_reference_keeps_them_exact():
    numbers = [int(v) for v in BIG_DIGITS]
    assert {len(str(n)) for n in numbers} == {16, 17, 18, 19} and max(numbers) == INTEGER_MAX
    assert 2**53 + 1 in numbers and any(int(float(n)) != n for n in numbers)
    p = spec(SEEDS[0]).params
    field = next(k for k, f in enumerate(p["fields"]) if f[2] == "INTEGER")
    leaf = p["fields"][field][1].split(".")[-1]
    for v in BIG_DIGITS:
        payload = '{"user": {"%s": "%s"}, "session": "%s"}' % (leaf, v, v)
        assert FAMILY.extract(p, payload)[field] == int(v)
    assert all(not isinstance(v, str) or len(v.strip()) < 16 for v in INTEGER_EDGES)  # only the class draws them


@pytest.mark.parametrize("seed", SEEDS)
def test_every_heldout_database_has_digit_strings_of_16_to_19_digits_within_integer_range(seed):
    s = spec(seed)
    t, fields = s.params["table"], s.params["fields"]
    ints = [k for k, f in enumerate(fields) if f[2] == "INTEGER"]
    got = [FAMILY.extract(s.params, r[2]) for r in heldout_rows(s)[t]]
    big = {v for row in got for k in ints if isinstance(v := row[k], int) and v >= 10**15}
    assert {len(str(v)) for v in big} >= {16, 17, 18, 19} and 2**53 + 1 in big and INTEGER_MAX in big
    assert all(v <= INTEGER_MAX for row in got for k in ints if isinstance(v := row[k], int))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_and_an_exact_rewrite_score_one_and_every_conversion_through_real_at_most_half(seed):
    s = spec(seed)
    sql = BY_NAME[s.family].migration(s.params)
    assert "AS REAL)) AS INTEGER" not in sql and CAST_DIGITS.search(sql)
    assert_exact_pass_and_through_real_fail(
        s,
        (sql, _converted(sql, r"(\1 + 0)")),
        {how: _converted(sql, replacement) for how, replacement in THROUGH_REAL.items()},
    )


def test_the_prompt_bounds_the_ids_by_the_integer_limit():
    rules = BY_NAME["extract_json"].rules(spec(SEEDS[0]).params)
    assert "' 9007199254740993' -> 9007199254740993" in rules
    assert f"No JSON integer or digit string in the data is larger than {INTEGER_MAX}" in rules
