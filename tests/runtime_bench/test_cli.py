"""`arena bench` without the `bench` extra stops before it runs anything and names the install command."""

import sys
import tomllib
from pathlib import Path

import pytest

from arena.cli import main
from runtime_bench.cli import BENCH_EXTRA_MODULES, INSTALL_BENCH

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def without_bench_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if `pip install arena-evals` ran without `[bench]`: importing the extra's modules fails."""
    for name in BENCH_EXTRA_MODULES:
        for loaded in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            monkeypatch.delitem(sys.modules, loaded)
        monkeypatch.setitem(sys.modules, name, None)  # find_spec → None, import → ImportError


# `--levels 0` is refused before a rollout runs, so a missing check fails this test rather than start a bench.
@pytest.mark.parametrize(
    "argv", [["bench", "--quick", "--levels", "0"], ["bench", "--render", "report.json"]], ids=["run", "render"]
)
def test_bench_without_the_extra_exits_2_with_the_install_command(
    without_bench_extra, argv, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert INSTALL_BENCH in err and "matplotlib" in err, err
    assert not list(tmp_path.iterdir()), "nothing may run (or be written) before the extra is checked"


def test_bench_help_answers_without_the_extra(without_bench_extra, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--help"])
    assert exit_.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_the_bench_extra_is_what_the_message_installs_and_the_platform_does_not_require_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert INSTALL_BENCH == f"pip install '{project['name']}[bench]'"
    extra = {req.split(">")[0].split("=")[0] for req in project["optional-dependencies"]["bench"]}
    assert set(BENCH_EXTRA_MODULES) <= extra
    assert not any(req.startswith(BENCH_EXTRA_MODULES) for req in project["dependencies"]), project["dependencies"]
