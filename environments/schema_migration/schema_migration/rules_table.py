"""Prints the rule -> value-class table (markdown) the README shows: `python -m schema_migration.rules_table [SEED ...]` (default: the first dev task of each family)."""

from __future__ import annotations

import sys

from schema_migration.families import BY_NAME, FAMILIES
from schema_migration.generate import Spec, seeds, spec

__all__ = ["markdown", "readme_specs"]


def readme_specs() -> list[Spec]:
    """The first dev task of each family, in family order."""
    return sorted((spec(seed) for seed in seeds("dev", len(FAMILIES))), key=lambda s: s.family)


def markdown(specs: list[Spec]) -> str:
    """One row per rule: the family and its variant knobs, the rule, and its value classes."""
    lines = ["| family (task) | rule | value classes (each has rows in every held-out database) |", "|---|---|---|"]
    for s in specs:
        for k, rule in enumerate(BY_NAME[s.family].rules_table(s.params)):
            where = f"`{s.family}` (seed {s.seed})" if k == 0 else ""
            classes = "; ".join(cls.name for cls in rule.classes).replace("|", "\\|")
            lines.append(f"| {where} | {rule.text.replace('|', chr(92) + '|')} | {classes} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown([spec(int(a)) for a in sys.argv[1:]] or readme_specs()))
