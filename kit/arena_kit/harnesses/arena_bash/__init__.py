"""The `arena-bash` harness: `harness` (verifiers' `BashHarness` host side), `program` (the stdlib in-box program,
one module per job) and `bundle` (which splices it into the one file written into each box). Nothing is imported
here; the id resolves through the top-level module `arena_bash`."""
