"""Every bad input the CLI is given ends in a one-line error and exit 2, never a traceback: a port out
of range, an export path that is a folder or cannot exist, a traces.jsonl that is a folder, a null
reward signal, a folder holding one corrupt run, JSON that is no vf-eval episode, an empty run, an
unknown flag (shown with its subcommand's usage); and `--version`, and help that says what each
subcommand does, with examples and exit codes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from arena.cli import _parser, main
from arena_testkit.synthetic_runs import episode_line, simple_run, write_run


def _fails(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> str:
    """`arena argv` exits 2 with one line naming the problem, and no traceback."""
    assert main(argv) == 2
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    assert out.err.startswith("arena: ") and len(out.err.strip().splitlines()) == 1, out.err
    assert says in out.err, out.err
    return out.err


def _usage_error(capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, says: str) -> None:
    """argparse's own errors: exit 2, the subcommand's usage, one error line."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {usage}") and says in err.splitlines()[-1] and "Traceback" not in err, err


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return simple_run(tmp_path / "runs" / "a", {"t1": [1.0], "t2": [0.0]})


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error_of_view(capsys, run, port):
    _usage_error(capsys, ["view", str(run), "--port", port], "arena view", "--port")


def test_an_export_path_that_is_a_folder_is_refused(capsys, run, tmp_path):
    _fails(capsys, ["view", str(run), "--export", str(tmp_path)], "is a directory")


def test_an_export_path_in_a_folder_that_cannot_exist_is_refused(capsys, run):
    _fails(capsys, ["view", str(run), "--export", "/proc/nope/x.html"], "cannot write --export /proc/nope/x.html")


def test_compare_of_a_run_whose_traces_file_is_a_folder_is_refused(capsys, run, tmp_path):
    bad = tmp_path / "bad"
    (bad / "traces.jsonl").mkdir(parents=True)
    _fails(capsys, ["compare", str(run), str(bad)], "is a directory, not a traces file")


@pytest.mark.parametrize("command", ["compare", "audit"])
def test_a_null_reward_signal_scores_zero_in_compare_and_audit(capsys, run, tmp_path, command):
    nulls = write_run(
        tmp_path / "nulls", [episode_line("t1", None, trace_id="n1"), episode_line("t2", 1.0, trace_id="n2")]
    )
    argv = ["compare", str(run), str(nulls)] if command == "compare" else ["audit", str(nulls)]
    assert main(argv) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and out.out


def test_a_folder_with_one_corrupt_run_opens_the_others_and_names_the_bad_one(capsys, run, tmp_path):
    simple_run(run.parent / "b", {"t1": [0.5]})
    corrupt = run.parent / "c"
    corrupt.mkdir()
    (corrupt / "traces.jsonl").write_text("not json\n" + json.dumps(episode_line("t1", 1.0, trace_id="x")) + "\n")
    out = tmp_path / "view.html"
    assert main(["view", str(run.parent), "--export", str(out)]) == 0
    captured = capsys.readouterr()
    assert str(corrupt) in captured.err and "corrupt" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert out.is_file() and "wrote" in captured.out


@pytest.mark.parametrize("command", ["view", "compare", "audit"])
def test_json_that_is_no_vf_eval_episode_is_refused(capsys, run, tmp_path, command):
    alien = tmp_path / "alien"
    alien.mkdir()
    (alien / "traces.jsonl").write_text('{"a": 1}\n')
    argv = {
        "view": ["view", str(alien), "--export", str(tmp_path / "x.html")],
        "compare": ["compare", str(run), str(alien)],
        "audit": ["audit", str(alien)],
    }[command]
    _fails(capsys, argv, "not a vf-eval episode")


@pytest.mark.parametrize("command", ["view", "compare", "audit"])
def test_an_empty_run_says_no_episodes(capsys, run, tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "traces.jsonl").write_text("")
    if command == "audit":
        assert main(["audit", str(empty)]) == 0
        assert capsys.readouterr().out.startswith(f"no episodes in {empty}")
        return
    argv = (
        ["view", str(empty), "--export", str(tmp_path / "x.html")]
        if command == "view"
        else ["compare", str(run), str(empty)]
    )
    _fails(capsys, argv, "no episodes")
    assert not (tmp_path / "x.html").exists()


@pytest.mark.parametrize("argv", [["compare", "nowhere", "nowhere2"], ["audit", "nowhere"], ["view", "nowhere"]])
def test_a_missing_run_directory_is_named(capsys, argv):
    _fails(capsys, argv, "nowhere")


def test_a_traces_file_given_for_its_run_directory_says_which_directory_to_give(capsys, run):
    _fails(capsys, ["audit", str(run / "traces.jsonl")], f"give its directory, {run}")


def test_audit_out_that_cannot_be_written_is_refused(capsys, run):
    _fails(capsys, ["audit", str(run), "--out", "/proc/nope"], "cannot write the report to --out /proc/nope")


def test_a_port_in_use_is_named_with_the_fix(capsys, run):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        _fails(capsys, ["view", str(run), "--port", str(taken.getsockname()[1])], "pass another --port")


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        (["view", "x", "--bogus"], "arena view"),
        (["compare", "a", "b", "--nope"], "arena compare"),
        (["images", "build", "--nope"], "arena images build"),
        (["--nope"], "arena"),
    ],
)
def test_an_unknown_flag_shows_its_subcommands_usage(capsys, argv, usage):
    _usage_error(capsys, argv, usage, "unrecognized arguments")


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("arena 0.")


def test_every_subcommand_says_what_it_does_with_examples_and_exit_codes():
    parser = _parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands = dict(sub.choices)
    images = next(a for a in commands["images"]._actions if a.__class__.__name__ == "_SubParsersAction")
    commands.update({f"images {k}": v for k, v in images.choices.items()})
    del commands["bench"]  # its own parser (runtime_bench.cli), which has its description and exit codes
    for name, command in commands.items():
        text = command.format_help()
        assert (
            command.description
            and "examples:" in text
            and "exit codes: 0 success" in text
            and "70 an internal error" in text
        ), name
