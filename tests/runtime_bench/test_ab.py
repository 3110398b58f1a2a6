"""`arena bench --ab`: paired runs, each figure's ratio with an interval, and a verdict only the whole interval decides."""

import random

import pytest

from arena.errors import UsageError
from arena.cli import main
from runtime_bench.ab import compare, load_reports
from runtime_bench.model import BenchReport, ConfigResult, LevelResult, Meta
from runtime_bench.report import build_report

LABEL = "docker-pool/arena-bash/arena-bench/shared"


def _run(started: str, overhead: float, rate: float, cpu: float, failures: int = 0) -> BenchReport:
    level = LevelResult(
        level=1,
        rollouts=24,
        completed=24,
        failures=failures,
        phases={"overhead": {"n": 24, "p50": overhead}},
        throughput=rate,
        cpu={"per_rollout_s": cpu},
    )
    meta = Meta(bench_id=f"bench-{started}", started=started, cpus=2, levels=[1], rollouts=24, model="arena/bench")
    return build_report(meta, [], [ConfigResult(label=LABEL, levels=[level])], [])


def _sides(scale: float, pairs: int = 12, drift: float = 0.3, noise: float = 0.03, seed: int = 0):
    """`pairs` alternating runs on a machine that slows by `drift` over the session; after = before × `scale`."""
    rng = random.Random(seed)
    before, after = [], []
    for i in range(pairs):
        machine = 0.2 * (1 + drift * i / pairs)
        b, a = machine * rng.gauss(1, noise), machine * scale * rng.gauss(1, noise)
        before.append(_run(f"2026-12-06 10:{i:02d}:00", b, 1 / b, 2 * b))
        after.append(_run(f"2026-12-06 10:{i:02d}:30", a, 1 / a, 2 * a))
    return before, after


def _verdicts(before, after) -> dict[str, str]:
    return {c.figure: c.verdict for c in compare(before, after)}


def test_an_unchanged_checkout_on_a_drifting_machine_is_within_the_limit():
    """The machine slows by 30 % over the session, four times the change of interest: pairing removes it."""
    before, after = _sides(1.0)
    assert set(_verdicts(before, after).values()) == {"within"}
    (overhead, *_) = compare(before, after)
    assert overhead.low < 1 < overhead.high


def test_a_real_slowdown_is_called_a_regression_in_the_figure_s_own_direction():
    before, after = _sides(1.25)  # overhead and CPU 25 % up, throughput 20 % down
    assert _verdicts(before, after) == {
        "overhead p50 (s)": "regressed",
        "rollouts/s": "regressed",
        "CPU-s per rollout": "regressed",
    }
    assert _verdicts(after, before) == dict.fromkeys(_verdicts(before, after), "improved")


def test_too_few_or_too_noisy_pairs_stay_undecided_rather_than_passing():
    before, after = _sides(1.05, pairs=3, noise=0.15, seed=3)
    assert "undecided" in _verdicts(before, after).values()


def test_a_run_with_failures_is_left_out_of_its_pair():
    before, after = _sides(1.0, pairs=4)
    after[0] = _run("2026-12-06 10:00:30", 99.0, 0.01, 99.0, failures=1)
    assert all(len(c.before) == 3 for c in compare(before, after))


def test_bad_input_is_a_clear_error(tmp_path):
    before, after = _sides(1.0, pairs=3)
    with pytest.raises(UsageError, match="pairs runs: 3 before, 2 after"):
        compare(before, after[:2])
    with pytest.raises(UsageError, match="at least two pairs"):
        compare(before[:1], after[:1])
    with pytest.raises(UsageError, match="no bench report.json"):
        load_reports(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.json").write_text("{}")
    with pytest.raises(UsageError, match="not a readable bench report.json"):
        load_reports(tmp_path)


def test_the_cli_reads_folders_in_start_order_and_exits_1_on_a_regression(tmp_path, capsys):
    before, after = _sides(1.25, pairs=4)
    for side, runs in (("before", before), ("after", after)):
        for i, run in enumerate(reversed(runs)):  # folder names in the reverse of the start order
            (tmp_path / side / f"run{i}").mkdir(parents=True)
            (tmp_path / side / f"run{i}" / "report.json").write_text(run.model_dump_json())
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    table = capsys.readouterr().out
    assert f"| {LABEL} | 1 | overhead p50 (s) | 4 | 1.2" in table and "regressed" in table
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "before")]) == 0
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "nope")]) == 2
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "after"), "--ab-limit", "5"]) == 2
    assert "no bench report.json" in capsys.readouterr().err
