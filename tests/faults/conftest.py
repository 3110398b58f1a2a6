"""Fault tests: evals that lose their model server, their engine or their own process and still end
with every episode scored. The helpers and the many-task taskset live in tests/faults/support."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "support"))
