"""`arena bench --ab`: runs paired in start order, each figure's ratio with an interval, and a verdict only the whole
interval decides; runs not made alternately or with other options refused; failed rollouts never dropped silently."""

import math
import random
from datetime import datetime, timedelta

import pytest

from arena.cli import main
from arena.errors import UsageError
from runtime_bench.ab import compare, load_reports, render
from runtime_bench.model import BenchReport, ConfigResult, LevelResult, Meta
from runtime_bench.report import build_report

POOL, LEAN = "docker-pool/arena-bash/arena-bench/shared", "docker-lean/arena-bash/arena-bench/shared"
T0 = datetime(2026, 12, 6, 10, 0, 0)


def _run(
    at: datetime, overhead: float, *, failures: int = 0, labels: tuple[str, ...] = (POOL,), rollouts: int = 24
) -> BenchReport:
    def level() -> LevelResult:
        return LevelResult(
            level=1,
            rollouts=rollouts,
            completed=rollouts,
            failures=failures,
            phases={"overhead": {"n": rollouts, "p50": overhead}},
            throughput=1 / overhead,
            cpu={"per_rollout_s": 2 * overhead},
        )

    meta = Meta(
        bench_id=f"bench-{at:%H%M%S}",
        started=f"{at:%Y-%m-%d %H:%M:%S}",
        cpus=2,
        levels=[1],
        rollouts=rollouts,
        model="arena/bench",
        config={"pairs": list(labels), "levels": [1], "output_dir": f"/tmp/{at:%H%M%S}"},
    )
    return build_report(meta, [], [ConfigResult(label=label, levels=[level()]) for label in labels], [])


def _sides(scale: float, pairs: int = 12, drift: float = 0.3, noise: float = 0.02, seed: int = 0):
    """`pairs` alternating runs (before, then after, a minute apart) on a machine that slows by `drift` over the
    session, so each run of a pair sees its own point of the drift; after = before × `scale`."""
    rng = random.Random(seed)
    before, after = [], []
    for i in range(pairs):
        at = T0 + timedelta(minutes=2 * i)
        slow_b, slow_a = (1 + drift * (2 * i + k) / (2 * pairs) for k in (0, 1))
        before.append(_run(at, 0.2 * slow_b * rng.gauss(1, noise)))
        after.append(_run(at + timedelta(minutes=1), 0.2 * slow_a * scale * rng.gauss(1, noise)))
    return before, after


def _verdicts(before, after) -> dict[str, str]:
    return {c.figure: c.verdict for c in compare(before, after).comparisons}


def test_an_unchanged_checkout_on_a_drifting_machine_is_within_the_limit_and_pairing_is_what_narrows_it():
    """The machine slows by 30 % over the session, three times the limit: paired, the interval is under 8 % wide;
    the same runs unpaired (after shuffled) give an interval over 2.5 times as wide (in log terms)."""
    before, after = _sides(1.0)
    assert set(_verdicts(before, after).values()) == {"within"}
    paired = compare(before, after).comparisons[0]
    assert paired.low < 1 < paired.high and paired.high / paired.low < 1.08
    overheads = [a.configs[0].levels[0].phases["overhead"].p50 for a in after]
    random.Random(1).shuffle(overheads)
    unpaired = [_run(T0 + timedelta(minutes=2 * i + 1), o) for i, o in enumerate(overheads)]
    shuffled = compare(before, unpaired).comparisons[0]
    assert math.log(shuffled.high / shuffled.low) > 2.5 * math.log(paired.high / paired.low)


def test_a_real_slowdown_is_called_a_regression_in_the_figure_s_own_direction():
    before, after = _sides(1.25)  # overhead and CPU 25 % up, throughput 20 % down
    assert _verdicts(before, after) == {
        "overhead p50 (s)": "regressed",
        "rollouts/s": "regressed",
        "CPU-s per rollout": "regressed",
    }
    before, after = _sides(0.75)
    assert set(_verdicts(before, after).values()) == {"improved"}


def test_the_limit_is_the_stated_fraction_in_either_direction():
    """A throughput 9 % down is not past a 10 % limit; 11 % down is (the limit is not 1/1.1 on that side)."""
    for scale, expected in ((1 / 0.91, "within"), (1 / 0.89, "regressed")):  # rollouts/s = 1 / overhead
        before, after = _sides(scale, noise=0.001, drift=0.0)
        assert _verdicts(before, after)["rollouts/s"] == expected


def test_too_few_or_too_noisy_pairs_stay_undecided_rather_than_passing():
    before, after = _sides(1.05, pairs=4, noise=0.15, seed=3)
    assert "undecided" in _verdicts(before, after).values()
    before, after = _sides(1.3, pairs=2, noise=0.0, drift=0.0)  # two identical ratios: no spread, yet no verdict
    assert set(_verdicts(before, after).values()) == {"undecided"}


def test_failed_rollouts_are_reported_and_fail_the_ab_when_only_the_after_side_has_them():
    before, after = [], []
    for i in range(4):
        at = T0 + timedelta(minutes=2 * i)
        before.append(_run(at, 0.2, labels=(POOL, LEAN)))
        after.append(_run(at + timedelta(minutes=1), 0.2, labels=(POOL, LEAN), failures=int(i > 0)))
    outcome = compare(before, after)
    assert outcome.failed_runs == {(LEAN, 1): (0, 3), (POOL, 1): (0, 3)} and outcome.regressed
    assert outcome.comparisons == []  # one pair without failures is left: no interval, and no "within"
    assert "in 0 run(s) before, 3 after (worse after)" in render(outcome, 0.1, 0.95)


def test_runs_not_made_alternately_or_with_other_options_are_refused():
    before, after = _sides(1.0, pairs=4)
    sequential = [_run(T0 + timedelta(hours=1, minutes=i), 0.2) for i in range(4)]  # every after run later
    with pytest.raises(UsageError, match="not made alternately: pair 1 .* overlaps pair 2"):
        compare(before, sequential)
    other = [_run(T0 + timedelta(minutes=2 * i + 1), 0.2, rollouts=60) for i in range(4)]
    with pytest.raises(UsageError, match=r"other options \(rollouts\)"):
        compare(before, other)
    other = [_run(T0 + timedelta(minutes=2 * i + 1), 0.2, labels=(LEAN,)) for i in range(4)]
    with pytest.raises(UsageError, match=r"other options \(pairs\)"):
        compare(before, other)


def test_bad_input_is_a_clear_error(tmp_path):
    before, after = _sides(1.0, pairs=3)
    with pytest.raises(UsageError, match="pairs runs: 3 before, 2 after"):
        compare(before, after[:2])
    with pytest.raises(UsageError, match="at least two pairs"):
        compare(before[:1], after[:1])
    with pytest.raises(UsageError, match="no bench report.json"):
        load_reports(tmp_path)
    (tmp_path / "run").mkdir()
    for content in (b"{}", b"\xff\xfe not utf-8"):
        (tmp_path / "run" / "report.json").write_bytes(content)
        with pytest.raises(UsageError, match=r"is not a bench report.json \(\d+ problem"):
            load_reports(tmp_path)


def _write(folder, runs: list[BenchReport], reverse: bool) -> None:
    for i, run in enumerate(reversed(runs) if reverse else runs):
        (folder / f"run{i}").mkdir(parents=True)
        (folder / f"run{i}" / "report.json").write_text(run.model_dump_json())


def test_the_cli_pairs_runs_in_start_order_not_folder_order_and_exits_1_on_a_regression(tmp_path, capsys):
    before, after = _sides(1.25, pairs=4)
    _write(tmp_path / "before", before, reverse=False)
    _write(tmp_path / "after", after, reverse=True)  # only this side's folder names run against the start order
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    table = capsys.readouterr().out
    assert f"| {POOL} | 1 | overhead p50 (s) | 4 | 1.2" in table and "regressed" in table
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "nope")]) == 2
    assert "no bench report.json" in capsys.readouterr().err
    assert main(["bench", "--ab", str(tmp_path / "before"), str(tmp_path / "after"), "--ab-limit", "5"]) == 2
    assert "--ab-limit is a fraction" in capsys.readouterr().err
    assert main(["bench", "--levels", "1", "--ab-limit", "0.2"]) == 2
    assert "--ab-limit applies only with --ab" in capsys.readouterr().err
