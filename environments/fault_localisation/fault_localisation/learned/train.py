"""Trains the learned shortcut's three models on train seeds only and writes them as JSON package data (the kit's fit and export)."""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arena_kit.adversaries.learned import dataset, train as kit, weights
from arena_kit.adversaries.learned.estimators import BOOSTING, gradient_boosting
from arena_kit.adversaries.learned.observe import Case
from fault_localisation.episode import split_tasks
from fault_localisation.learned.dataset import Example, examples
from fault_localisation.learned.features import feature_names, features
from fault_localisation.learned.plan import VARIANTS
from fault_localisation.taskset import generator_fingerprint

__all__ = ["PARAMS", "USAGE", "export", "fit", "fit_threshold", "main", "matrix", "train"]

USAGE = """\
python -m fault_localisation.learned.train [--tasks 2000] [--out DIR] [--seed S] [--store-dir DIR]
[--prune-stores] [--difficulty easy|medium|hard] trains the three variants (`all`, `names`, `counts_graph`) in one
run on the train split's first `tasks` seeds and writes <out>/<variant>.json (default: the
package's weights directory). scikit-learn is needed here only (the `train` extra); the policies
read the JSON in pure Python."""

PARAMS: dict[str, Any] = BOOSTING
"""scikit-learn GradientBoostingClassifier settings (random_state is the run's seed): the kit's `BOOSTING`."""
FOLDS = kit.FOLDS
"""Cross-validation folds (grouped by incident) whose out-of-fold scores fit the "none" threshold."""


def cases(exs: list[Example], variant: str) -> list[Case[Example, Any]]:
    """Each example as the kit's case for `variant`: no rows when the plan called it quiet."""
    return [
        Case(
            ex,
            ex.ctx,
            None if ex.seen[variant].none else features(ex.ctx, ex.seen[variant]),
            ex.queries[variant],
            ex.root,
        )
        for ex in exs
    ]


def matrix(exs: list[Example], variant: str) -> tuple[list[list[float]], list[int], list[int], list[str]]:
    """Rows (one per service of each incident the plan did not call quiet), labels, incident index, service."""
    m = dataset.matrix(cases(exs, variant), feature_names(variant))
    return m.X, m.y, m.group, m.candidate


def fit(X: list[list[float]], y: list[int], seed: int) -> Any:
    return gradient_boosting(seed).fit(X, y)


def fit_threshold(
    exs: list[Example], variant: str, probs: list[float], group: list[int], service: list[str]
) -> tuple[float, dict[str, float]]:
    """The top-probability threshold below which answering "none" pays best on these (out-of-fold)
    scores: a right service counts 1, a control answered none 1; halfway down to the next lower score."""
    return kit.none_threshold(cases(exs, variant), kit.top(probs, group, service), midpoint=True)


def export(clf: Any, variant: str, threshold: float, meta: dict[str, Any]) -> dict[str, Any]:
    """The fitted ensemble as the JSON `model.Model` reads."""
    return weights.export(clf, feature_names(variant), threshold, {**meta, "variant": variant})


def train(
    tasks: int = 2000,
    seed: int = 0,
    out: Path | None = None,
    store_dir: Path | None = None,
    variants: tuple[str, ...] = VARIANTS,
    verbose: bool = True,
    prune: bool = False,
    **knobs: Any,
) -> dict[str, Path]:
    """Train every variant on the train split's first `tasks` incidents; write `<out>/<variant>.json`
    (default: the package's weights directory). Returns the written paths."""
    import sklearn

    began = time.monotonic()
    split = split_tasks("train", tasks, store_dir, **knobs)
    exs = []
    for i, ex in enumerate(examples(split, store_dir, variants, prune)):
        exs.append(ex)
        if verbose and (i + 1) % 100 == 0:
            print(f"  observed {i + 1}/{tasks} train incidents ({time.monotonic() - began:.0f} s)", flush=True)
    observed_s = time.monotonic() - began
    out = out or Path(__file__).parent / "weights"
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for variant in variants:
        fit_began = time.monotonic()
        seen = cases(exs, variant)
        m = dataset.matrix(seen, feature_names(variant))
        probs = kit.out_of_fold(gradient_boosting, m, seed, FOLDS)
        threshold, cv = kit.none_threshold(seen, kit.top(probs, m.group, m.candidate), midpoint=True)
        clf = fit(m.X, m.y, seed)
        y = m.y
        meta = {
            "generator": generator_fingerprint(),
            "knobs": asdict(split[0].data.knobs) if split else {},
            "knob_overrides": knobs,
            "split": "train",
            "train_seeds": [split[0].data.seed, split[-1].data.seed] if split else [],
            "tasks": tasks,
            "rows": len(y),
            "seed": seed,
            "params": PARAMS,
            "folds": FOLDS,
            "cv": cv,
            "observe_s": round(observed_s, 1),
            "fit_s": round(time.monotonic() - fit_began, 1),
            "sklearn": sklearn.__version__,
            "python": platform.python_version(),
            "retrain": f"python -m fault_localisation.learned.train --tasks {tasks} --seed {seed} --prune-stores",
        }
        data = export(clf, variant, threshold, meta)
        path = out / f"{variant}.json"
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        written[variant] = path
        if verbose:
            print(
                f"{variant}: {len(data['features'])} features, {len(y)} rows, threshold {threshold:.3f}, "
                f"out-of-fold top-1 {cv['oof_top1']:.3f} (with none {cv['oof_top1_with_none']:.3f}), "
                f"fit {meta['fit_s']} s, {path.stat().st_size / 1024:.0f} KiB -> {path}",
                flush=True,
            )
    if verbose:
        print(f"trained in {time.monotonic() - began:.0f} s ({observed_s:.0f} s observing {tasks} incidents)")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fault_localisation.learned.train", description=USAGE)
    parser.add_argument("--tasks", type=int, default=2000, help="train incidents (train split seeds 0..tasks-1)")
    parser.add_argument("--out", type=Path, default=None, help="directory for <variant>.json (default: the package)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--store-dir",
        type=Path,
        default=None,
        help="log store cache (default: the tasks' own, ~/.cache/arena/log_search)",
    )
    parser.add_argument("--variant", action="append", choices=VARIANTS, help="train only these (repeatable)")
    parser.add_argument("--prune-stores", action="store_true", help="delete each log store once observed")
    parser.add_argument("--difficulty", default=None, help="the taskset's difficulty preset (default: its default)")
    args = parser.parse_args(argv)
    knobs = {} if args.difficulty is None else {"difficulty": args.difficulty}
    train(
        args.tasks,
        args.seed,
        args.out,
        args.store_dir,
        tuple(args.variant or VARIANTS),
        prune=args.prune_stores,
        **knobs,
    )


if __name__ == "__main__":
    main()
