"""The `arena-bash` harness: `harness` (verifiers' `BashHarness` host side) and the stdlib in-box program it
writes into each box. Nothing is imported here; the id resolves through the top-level module `arena_bash`."""
