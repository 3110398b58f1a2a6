"""Trains the learned shortcut's three models on train seeds only and writes them as JSON package data."""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from fault_localisation.episode import split_tasks
from fault_localisation.learned.dataset import Example, examples
from fault_localisation.learned.features import feature_names, features
from fault_localisation.learned.model import FORMAT, Model
from fault_localisation.learned.plan import VARIANTS
from fault_localisation.taskset import generator_fingerprint

__all__ = ["PARAMS", "USAGE", "export", "fit", "fit_threshold", "main", "matrix", "train"]

USAGE = """\
python -m fault_localisation.learned.train [--tasks 2000] [--out DIR] [--seed S] [--store-dir DIR]
[--prune-stores] [--difficulty easy|medium|hard] trains the three variants (`all`, `names`, `counts_graph`) in one
run on the train split's first `tasks` seeds and writes <out>/<variant>.json (default: the
package's weights directory). scikit-learn is needed here only (the `train` extra); the policies
read the JSON in pure Python."""

PARAMS: dict[str, Any] = {"n_estimators": 150, "max_depth": 3, "learning_rate": 0.1, "subsample": 0.8,
                          "min_samples_leaf": 5}
"""scikit-learn GradientBoostingClassifier settings (random_state is the run's seed)."""
FOLDS = 3
"""Cross-validation folds (grouped by incident) whose out-of-fold scores fit the "none" threshold."""


def matrix(exs: list[Example], variant: str) -> tuple[list[list[float]], list[int], list[int], list[str]]:
    """Rows (one per service of each incident the plan did not call quiet), labels, incident index, service."""
    names = feature_names(variant)
    X: list[list[float]] = []
    y: list[int] = []
    group: list[int] = []
    service: list[str] = []
    for i, ex in enumerate(exs):
        seen = ex.seen[variant]
        if seen.none:
            continue
        for name, row in sorted(features(ex.ctx, seen).items()):
            X.append([row[k] for k in names])
            y.append(int(name == ex.root))
            group.append(i)
            service.append(name)
    return X, y, group, service


def fit(X: list[list[float]], y: list[int], seed: int) -> Any:
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(random_state=seed, **PARAMS).fit(X, y)


def fit_threshold(exs: list[Example], variant: str, probs: list[float], group: list[int],
                  service: list[str]) -> tuple[float, dict[str, float]]:
    """The top-probability threshold below which answering "none" pays best on these (out-of-fold)
    scores: a right service counts 1, a control answered none 1."""
    top: dict[int, tuple[float, str]] = {}
    for p, g, s in zip(probs, group, service):
        if g not in top or (-p, s) < (-top[g][0], top[g][1]):
            top[g] = (p, s)
    quiet_controls = sum(1 for i, ex in enumerate(exs) if ex.seen[variant].none and ex.root == "none")
    cases = [(p, s == exs[g].root, exs[g].root == "none") for g, (p, s) in top.items()]
    best_t, best = 0.0, -1.0
    for t in sorted({0.0, *(p for p, _, _ in cases)}):
        score = quiet_controls + sum(right if p >= t else control for p, right, control in cases)
        if score > best:
            best_t, best = t, score
    # Halfway down to the next lower score, so a borderline case is not decided by rounding.
    lower = [p for p, _, _ in cases if p < best_t]
    threshold = (best_t + max(lower)) / 2 if lower and best_t > 0 else best_t
    return threshold, {"oof_top1_with_none": best / max(1, len(exs)),
                       "oof_top1": sum(right for _, right, _ in cases) / max(1, len(exs))}


def export(clf: Any, variant: str, threshold: float, meta: dict[str, Any]) -> dict[str, Any]:
    """The fitted ensemble as the JSON `model.Model` reads."""
    trees = []
    for estimator in clf.estimators_[:, 0]:
        t = estimator.tree_
        trees.append({"feature": [int(f) if f >= 0 else -1 for f in t.feature],
                      "threshold": [float(x) if f >= 0 else 0.0 for x, f in zip(t.threshold, t.feature)],
                      "left": [int(c) for c in t.children_left], "right": [int(c) for c in t.children_right],
                      "value": [float(v[0][0]) for v in t.value]})
    # The ensemble's starting score: the raw prediction minus what the trees add.
    row = [[0.0] * clf.n_features_in_]
    init = float(clf.decision_function(row)[0]) - clf.learning_rate * sum(
        float(e.predict(row)[0]) for e in clf.estimators_[:, 0])
    return {"format": FORMAT, "meta": {**meta, "variant": variant}, "features": feature_names(variant),
            "init": init, "learning_rate": float(clf.learning_rate), "threshold": threshold, "trees": trees}


def train(tasks: int = 2000, seed: int = 0, out: Path | None = None, store_dir: Path | None = None,
          variants: tuple[str, ...] = VARIANTS, verbose: bool = True, prune: bool = False,
          **knobs: Any) -> dict[str, Path]:
    """Train every variant on the train split's first `tasks` incidents; write `<out>/<variant>.json`
    (default: the package's weights directory). Returns the written paths."""
    import sklearn
    from sklearn.model_selection import GroupKFold

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
        X, y, group, service = matrix(exs, variant)
        probs = [0.0] * len(y)
        for fold, (fit_rows, held) in enumerate(GroupKFold(FOLDS).split(X, y, group)):
            clf = fit([X[i] for i in fit_rows], [y[i] for i in fit_rows], seed + fold + 1)
            for i, p in zip(held, clf.predict_proba([X[i] for i in held])[:, 1]):
                probs[i] = float(p)
        threshold, cv = fit_threshold(exs, variant, probs, group, service)
        clf = fit(X, y, seed)
        meta = {
            "generator": generator_fingerprint(), "knobs": asdict(split[0].data.knobs) if split else {},
            "knob_overrides": knobs, "split": "train",
            "train_seeds": [split[0].data.seed, split[-1].data.seed] if split else [],
            "tasks": tasks, "rows": len(y), "seed": seed, "params": PARAMS, "folds": FOLDS, "cv": cv,
            "observe_s": round(observed_s, 1), "fit_s": round(time.monotonic() - fit_began, 1),
            "sklearn": sklearn.__version__, "python": platform.python_version(),
            "retrain": f"python -m fault_localisation.learned.train --tasks {tasks} --seed {seed} --prune-stores",
        }
        data = export(clf, variant, threshold, meta)
        path = out / f"{variant}.json"
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        written[variant] = path
        if verbose:
            print(f"{variant}: {len(data['features'])} features, {len(y)} rows, threshold {threshold:.3f}, "
                  f"out-of-fold top-1 {cv['oof_top1']:.3f} (with none {cv['oof_top1_with_none']:.3f}), "
                  f"fit {meta['fit_s']} s, {path.stat().st_size / 1024:.0f} KiB -> {path}", flush=True)
    if verbose:
        print(f"trained in {time.monotonic() - began:.0f} s ({observed_s:.0f} s observing {tasks} incidents)")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fault_localisation.learned.train", description=USAGE)
    parser.add_argument("--tasks", type=int, default=2000, help="train incidents (train split seeds 0..tasks-1)")
    parser.add_argument("--out", type=Path, default=None, help="directory for <variant>.json (default: the package)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--store-dir", type=Path, default=None,
                        help="log store cache (default: the tasks' own, ~/.cache/arena/log_search)")
    parser.add_argument("--variant", action="append", choices=VARIANTS, help="train only these (repeatable)")
    parser.add_argument("--prune-stores", action="store_true", help="delete each log store once observed")
    parser.add_argument("--difficulty", default=None, help="the taskset's difficulty preset (default: its default)")
    args = parser.parse_args(argv)
    knobs = {} if args.difficulty is None else {"difficulty": args.difficulty}
    train(args.tasks, args.seed, args.out, args.store_dir, tuple(args.variant or VARIANTS), prune=args.prune_stores,
          **knobs)


if __name__ == "__main__":
    main()
