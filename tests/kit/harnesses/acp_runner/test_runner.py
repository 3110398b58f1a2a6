"""What the lean runtime swaps in for verifiers' ACP runner: only that runner, by digest, and a program the
image's bare `python3 -I` can run (`arena_kit.harnesses.acp_runner`)."""

from __future__ import annotations

import ast
import sys

from verifiers.v1 import acp as verifiers_acp

from arena_kit.harnesses import acp_runner


def test_the_swap_recognises_the_verifiers_runner_it_was_compared_against_and_nothing_else():
    assert acp_runner.replaces(verifiers_acp.ACP_SOURCE.encode())  # a verifiers upgrade fails here: re-compare
    assert not acp_runner.replaces(verifiers_acp.ACP_SOURCE.encode() + b"\n")
    assert not acp_runner.replaces(acp_runner.RUNNER_SOURCE)


def test_the_program_imports_only_the_standard_library():
    tree = ast.parse(acp_runner.RUNNER_SOURCE)
    modules = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    modules |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert modules and modules <= set(sys.stdlib_module_names) | {"__future__"}, modules - set(sys.stdlib_module_names)
