"""Test helpers shared across the suite. tests/support is on the tests' import path through pytest's
`pythonpath` option (pyproject [tool.pytest.ini_options]); subprocesses that import the test-only
packages beside this one (arena_smoke, arena_isolation, arena_fault_smoke, prime_standin, ...) get
`SUPPORT` on their PYTHONPATH."""

from pathlib import Path

SUPPORT = Path(__file__).resolve().parents[1]
"""tests/support: the one root of every test-only package; what a subprocess needs on its PYTHONPATH."""
