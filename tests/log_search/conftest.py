"""Import the real packages this directory tests before its test modules do.

The root conftest puts tests/ on sys.path, where this directory, named like the package it
tests, would be picked up as an empty namespace package and shadow the editable install.
"""

import importlib
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]


def _import_real(name: str) -> None:
    if getattr(sys.modules.get(name), "__file__", None):
        return
    sys.modules.pop(name, None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _TESTS]
    try:
        importlib.import_module(name)
    finally:
        sys.path[:] = saved


for _name in ("log_search",):
    _import_real(_name)
