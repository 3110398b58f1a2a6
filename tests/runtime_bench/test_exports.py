"""The package's public surface is deliberate: `__all__` names exactly what it exports.

Checked in a fresh interpreter: under pytest, `tests/` is first on sys.path and this folder
shadows the package as a namespace package, so its `__init__` would not run here.
"""

import json
import subprocess
import sys

PROBE = "import json, runtime_bench; print(json.dumps([runtime_bench.__all__, all(hasattr(runtime_bench, n) for n in runtime_bench.__all__)]))"


def test_the_package_exports_exactly_its_public_api(tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    names, present = json.loads(done.stdout)
    assert sorted(names) == [
        "BenchConfig",
        "Combo",
        "build_report",
        "render_markdown",
        "render_plot",
        "run_bench",
        "write_report",
    ]
    assert present
