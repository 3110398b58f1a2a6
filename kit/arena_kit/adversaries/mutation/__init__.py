"""The mutation sweep as a library: one-edit operators over the reference answer, an argued equivalence table, a parallel runner, and the adequacy gate.

What it proves: the grader's held-out data tell every one-edit wrong answer from the reference,
except the mutants the environment argues equivalent. The environment writes the hooks: its
operators over its reference's parsed form and the mutants they make (`operators`), its
equivalences (`equivalence`), and a module-level sweep of one task (`sweep.graded` inside); the kit
runs the tasks in parallel (`sweep.run`) and decides adequacy (`adequacy`).
"""

__all__: list[str] = []
"""Import from the modules (each lists its names in `__all__`)."""
