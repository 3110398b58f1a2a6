"""`arena new-env`: a free name gets a whole package; a bad or clashing name, or an existing folder, gets one line, exit 2 and nothing written."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from arena.cli import main
from arena.new_env import new_environment, next_steps
from arena.errors import UsageError
from arena.new_env import scaffold
from arena.new_env.names import check_name, checkout_distributions, checkout_root

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "pyproject.toml",
    "README.md",
    "tests/test_demo_env.py",
    "demo_env/__init__.py",
    "demo_env/taskset.py",
    "demo_env/toolset.py",
    "demo_env/generate.py",
    "demo_env/grade.py",
    "demo_env/policies.py",
    "demo_env/adversaries.py",
    "demo_env/image/Dockerfile",
}


def test_a_free_name_gets_the_whole_package_with_every_name_filled_in(tmp_path: Path) -> None:
    names, folder, written = new_environment("demo-env", tmp_path / "demo_env")
    assert (names.env_id, names.package, names.classes) == ("demo-env", "demo_env", "DemoEnv")
    assert {p.relative_to(folder).as_posix() for p in written} == FILES
    for path in written:
        text = path.read_text()
        assert "{{" not in text and "{%" not in text, path
        if path.suffix == ".py":
            ast.parse(text, str(path))
    init = (folder / "demo_env/__init__.py").read_text()
    assert 'id="demo-env"' in init and '__all__ = ["DemoEnvTaskset", "LeanEnv"]' in init
    assert (
        '[project.entry-points."arena.environments"]\ndemo-env = "demo_env:ENVIRONMENT"'
        in (folder / "pyproject.toml").read_text()
    )
    assert "FROM ${FROM_IMAGE}" in (folder / "demo_env/image/Dockerfile").read_text()


def test_the_cli_writes_the_package_and_says_what_to_run_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new-env", "demo-env", "--dir", str(tmp_path / "pkg")]) == 0
    out = capsys.readouterr().out
    assert "pip install -e" in out and "arena probe demo-env --tasks 5" in out
    assert "eval_configs" not in out  # no config to write: Arena's configs serve every environment
    assert (tmp_path / "pkg/demo_env/taskset.py").is_file()


def test_in_a_checkout_s_environments_the_next_steps_write_no_config(tmp_path: Path) -> None:
    (tmp_path / "environments").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "arena-evals"\n')
    names, folder, _written = new_environment("demo-env", cwd=tmp_path)
    assert folder == tmp_path / "environments/demo_env"
    assert next_steps(names, folder) == [
        f"pip install -e {folder}",
        "arena images build demo-env",
        "arena probe demo-env --tasks 5",
    ]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("Demo", "is not an environment id"),
        ("demo_env", "is not an environment id"),
        ("1demo", "is not an environment id"),
        ("demo--env", "is not an environment id"),
        ("d" * 41, "is not an environment id"),
        ("harness", "is reserved"),
        ("class", "is reserved"),
        ("schema-migration", "is installed already"),
        ("json", "the importable module 'json'"),
        ("textarena", "verifiers' own taskset"),
        ("log-search", "clashes with"),
    ],
)
def test_a_bad_or_clashing_name_is_one_line_exit_2_and_nothing_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    says: str,
) -> None:
    assert main(["new-env", name, "--dir", str(tmp_path / "pkg")]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_a_distribution_declared_in_the_checkout_clashes_even_when_not_installed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "arena-evals"\n')
    (tmp_path / "environments/other").mkdir(parents=True)
    (tmp_path / "environments/other/pyproject.toml").write_text('[project]\nname = "Not_Installed.Yet"\n')
    root = checkout_root(tmp_path / "environments")
    assert root == tmp_path and "not-installed-yet" in checkout_distributions(root)
    with pytest.raises(UsageError, match="declared in"):
        check_name("not-installed-yet", root)


def test_the_real_checkout_declares_its_packages() -> None:
    assert {"arena-evals", "arena-kit", "log-search", "sqlite-sandbox", "schema-migration"} <= checkout_distributions(
        ROOT
    )


def test_an_existing_folder_is_refused_and_left_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/keep.txt").write_text("mine")
    assert main(["new-env", "demo-env", "--dir", str(tmp_path / "pkg")]) == 2
    assert "exists already" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "pkg").iterdir()] == ["keep.txt"]


def test_a_missing_parent_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new-env", "demo-env", "--dir", str(tmp_path / "no/such/pkg")]) == 2
    assert "does not exist" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_a_write_that_fails_halfway_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = Path.write_text

    def failing(self: Path, text: str, *args: object, **kwargs: object) -> int:
        calls.append(self)
        if len(calls) == 4:
            raise OSError(28, "No space left on device")
        return real(self, text)

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(OSError, match="No space"):
        scaffold.write(tmp_path / "pkg", scaffold.render(check_name("demo-env", None)))
    assert list(tmp_path.iterdir()) == []


def test_the_default_folder_is_environments_in_a_checkout_and_here_elsewhere(tmp_path: Path) -> None:
    _names, folder, _written = new_environment("demo-env", cwd=tmp_path)
    assert folder == tmp_path / "demo_env"
    (tmp_path / "environments").mkdir()
    _names, folder, _written = new_environment("other-env", cwd=tmp_path)
    assert folder == tmp_path / "environments/other_env"
