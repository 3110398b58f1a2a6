"""The lean harness tests' helpers (`tests/lean/support`) go on sys.path; see `lean_testkit`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "support"))
