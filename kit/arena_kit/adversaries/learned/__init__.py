"""The learned shortcut as a library: a plan over cheap signals, features, a train-split dataset, a fit, weights, and play against the real grader.

What it proves: no learner over the signals an environment names as cheap (positions, counts, names
in lines: whatever a shortcut could read without investigating) scores above its ceiling on dev or
test, by the gate's upper bound. The environment writes the hooks (`Ground`: tasks, context, tools
offline, label, reward) and the learner (`Learner`: plan, features, estimator); the kit drives the
plans (`offline`), builds the matrix (`dataset`), fits the estimator and its "none" threshold out of
fold (`train`, `estimators`), exports and reads tree ensembles (`weights`), and plays the fit on a
split (`play`, `adversary`).
"""

__all__: list[str] = []
"""Import from the modules (each lists its names in `__all__`)."""
