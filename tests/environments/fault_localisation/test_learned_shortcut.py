"""The learned shortcut: shipped weights match the generator, its plan stays within the rules, the
offline training executor sees what the real toolset shows, JSON inference equals sklearn's, and a
freshly retrained model stays under the shortcut ceiling (the learned adversary)."""

from __future__ import annotations

import random
from statistics import mean

import pytest

from arena_kit.adversaries.learned.weights import Model
from arena_kit.policy import CallTool
from arena_kit.scripted import SHORTCUT_CEILING
from arena_testkit.fault_episode import run_all, split_tasks
from fault_localisation.grade import RULES
from fault_localisation.learned import LEARNED
from fault_localisation.learned.dataset import context_of, examples
from fault_localisation.learned.features import features
from fault_localisation.learned.model import shipped
from fault_localisation.learned.plan import MAX_PLAN_QUERIES, VARIANTS, observe
from fault_localisation.observe import first_json, scripted
from fault_localisation.policies import POLICIES
from fault_localisation.shortcuts import SHORTCUTS
from fault_localisation.taskset import generator_fingerprint

RETRAIN = (
    "retrain the learned shortcut on this generator: pip install -e 'environments/fault_localisation[train]' "
    "&& python -m fault_localisation.learned.train --tasks 2000 --prune-stores --store-dir /tmp/fl-train"
)
TASKS = 8


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return split_tasks("dev", TASKS, tmp_path_factory.mktemp("stores"))


@pytest.fixture(scope="module")
def episodes(tasks):
    return {name: run_all(policy, tasks) for name, policy in LEARNED.items()}


def test_the_generator_fingerprint_ignores_formatting_and_sees_code(monkeypatch):
    import inspect

    from fault_localisation import taskset

    real = inspect.getsource
    before = generator_fingerprint()

    def fingerprint_of(edit) -> str:
        monkeypatch.setattr(inspect, "getsource", lambda module: edit(real(module)))
        generator_fingerprint.cache_clear()
        try:
            return taskset.generator_fingerprint()
        finally:
            monkeypatch.setattr(inspect, "getsource", real)
            generator_fingerprint.cache_clear()

    # A formatter's kind of edit (comments, blank lines, a statement's layout) keeps the stores and the weights.
    assert fingerprint_of(lambda text: f"# a comment\n\n{text}\n\n\n") == before
    assert (
        fingerprint_of(
            lambda text: text.replace(
                "from __future__ import annotations", "from __future__ import (\n    annotations,\n)"
            )
        )
        == before
    )
    # A changed constant is a changed generator.
    assert fingerprint_of(lambda text: text + "\nEXTRA = 1\n") != before


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_shipped_weights_match_the_generator(variant):
    meta = shipped(variant).meta
    assert meta["generator"] == generator_fingerprint(), (
        f"{variant}.json was trained on generator {meta['generator']}, this is {generator_fingerprint()}: {RETRAIN}"
    )
    assert meta["split"] == "train" and meta["train_seeds"][1] < 1_000_000


def test_the_learned_policies_are_published_as_shortcuts():
    for name, policy in LEARNED.items():
        assert name.startswith("shortcut_learned") and SHORTCUTS[name] is policy and POLICIES[name] is policy


@pytest.mark.slow
def test_the_plan_never_filters_by_trace_and_stays_within_the_free_queries(episodes):
    for name, runs in episodes.items():
        for episode in runs:
            log = episode.trace.state.query_log
            assert episode.trace.state.queries_used <= RULES.free_queries, name
            assert not any("trace" in q.args for q in log), (name, log)
            # The plan spends at most six; a seventh is the one read of the chosen service.
            submission = episode.trace.state.submission
            assert submission is not None and submission.evidence == [], name
            plan = log[:-1] if submission.service != "none" else log
            assert len(plan) <= MAX_PLAN_QUERIES, (name, log)
            if submission.service != "none":
                assert log[-1].tool == "search_logs" and log[-1].args["service"] == submission.service


def _replayed(episode, variant):
    """The plan's view replayed over the results the real toolset returned in the episode."""
    ctx = context_of(episode.task)
    run = observe(ctx, variant)
    call = next(run)
    results = iter(episode.results)
    try:
        while True:
            assert isinstance(call, CallTool)
            call = run.send(first_json(next(results)) or {})
    except StopIteration as done:
        return ctx, done.value


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.slow
def test_the_training_executor_sees_what_the_real_toolset_shows(tasks, episodes, tmp_path, variant):
    name = {
        "all": "shortcut_learned",
        "names": "shortcut_learned_names",
        "counts_graph": "shortcut_learned_counts_graph",
    }[variant]
    offline = list(examples(tasks[:4], tmp_path, (variant,)))
    for example, episode in zip(offline, episodes[name][:4]):
        ctx, live = _replayed(episode, variant)
        assert live == example.seen[variant], example.seed
        if not live.none:
            assert features(ctx, live) == features(example.ctx, example.seen[variant]), example.seed


@pytest.mark.slow
def test_json_inference_equals_sklearn():
    pytest.importorskip("sklearn")
    from fault_localisation.learned.features import feature_names
    from fault_localisation.learned.train import export, fit

    names = feature_names("names")
    rng = random.Random(7)
    X = [
        [rng.choice([0.0, 1.0, rng.random(), rng.gauss(0, 3), float(rng.randrange(5))]) for _ in names]
        for _ in range(400)
    ]
    y = [int(row[0] + row[1] > 1.2 or rng.random() < 0.05) for row in X]
    clf = fit(X, y, seed=3)
    model = Model.from_json(export(clf, "names", 0.5, {}))
    expected = clf.predict_proba(X[:60])[:, 1]
    for row, p in zip(X[:60], expected):
        assert model.probability(dict(zip(names, row))) == pytest.approx(float(p), abs=1e-9)


@pytest.mark.slow
def test_a_retrained_learned_adversary_stays_under_the_shortcut_ceiling(tmp_path):
    pytest.importorskip("sklearn")
    from arena_kit.adversaries.learned.weights import load
    from fault_localisation.learned.policy import learned_script
    from fault_localisation.learned.train import train

    store = tmp_path / "stores"
    paths = train(tasks=60, seed=1, out=tmp_path / "weights", store_dir=store, variants=("all",), verbose=False)
    fresh = split_tasks("dev", 30, store)
    adversary = scripted(learned_script("all", load(paths["all"])))
    learned = mean(e.reward for e in run_all(adversary, fresh))
    oracle = mean(e.reward for e in run_all(POLICIES["oracle"], fresh))
    assert learned <= min(SHORTCUT_CEILING, oracle - 0.5), f"learned adversary {learned:.3f}, oracle {oracle:.3f}"
