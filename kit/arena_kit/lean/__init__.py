"""The lean rollout path: `harness` (the `arena-bash` harness, verifiers' bash loop in a stdlib
`runner`), `runtime` (verifiers' docker runtime over the Engine API) and `env` (`LeanEnv`).

Nothing is imported here: the harness pulls in verifiers' harness stack, which a tool server that
only borrows boxes through `runtime` must not pay for. The id `arena-bash` resolves to the
top-level module `arena_bash`.
"""
