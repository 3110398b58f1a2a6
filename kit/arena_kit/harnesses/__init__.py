"""Arena's harnesses in verifiers' plugin shape: `arena_bash` (verifiers' bash loop in a stdlib in-box
program) and `codex` (verifiers' codex harness without its shutdown wait), each loaded by id through its
top-level module (`arena_bash`, `arena_codex`). Nothing is imported here: one harness must not pay for another."""
