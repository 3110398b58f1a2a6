"""Shared test set-up. Recipes: `pytest -n auto` (all), `-m 'not docker'` (no engine needed),
`-m docker` (containers only). Docker tests skip outside CI when no engine answers, and fail in CI."""

import sys
from pathlib import Path

# Lets tests import the helpers in tests/support as `support.*`.
sys.path.insert(0, str(Path(__file__).parent))
