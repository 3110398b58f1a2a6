"""The gate's strongest offline adversaries as a library: a learner trained on train over cheap signals (`learned`), a sweep of one-edit mutants of the reference (`mutation`)."""

__all__: list[str] = []
