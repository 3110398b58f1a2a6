"""The in-box program of the `arena-bash` harness, one module per job: verifiers' bash chat loop on the stdlib alone.

It speaks the same wire as verifiers 0.4.0's bundled chat program (`harnesses/utils/{core,mcp,
compaction}.py` run with `--bash`): the same argv, request bodies (key order included, so the
interception and the model see byte-identical JSON), tools, tool-result text, truncation, gate
calls, compaction and exit codes; it only drops the openai/mcp/httpx/tenacity imports (≈1.2 CPU-s
per rollout) and the `uv sync` that installs them. `arena_bash.bundle` splices the modules into one
file, written into the box once per rollout and run with `python3 -I`, so they import nothing
outside the standard library but each other (by absolute `from … import`, at module level).
Nothing is imported here: the bundle is the program, this package only its source.
"""
