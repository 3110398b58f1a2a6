"""The harness image's two per-rollout CPU cuts, checked on their source files (no engine): the
`claude` CLI shim and the ACP runner envs' pydantic hook (arena/images/dockerfiles/harness)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.images.context import HARNESS_FILES
from arena.images.specs import specs

HARNESS_DIR = specs()["harness"].dockerfile_dir
PROBE = ["auth", "status", "--json"]


@pytest.fixture
def shim(tmp_path: Path) -> tuple[Path, Path]:
    """The shim as the image installs it, in front of a stand-in binary that logs its argv."""
    log = tmp_path / "argv.log"
    real = tmp_path / "claude.exe"
    real.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\necho REAL\nexit 7\n')
    real.chmod(0o755)
    installed = tmp_path / "claude"
    installed.write_text((HARNESS_DIR / "claude-auth-status.sh").read_text().replace("@CLAUDE_EXE@", str(real)))
    installed.chmod(0o755)
    return installed, log


def _env(**extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return {**keep, **extra}


def test_the_claude_shim_answers_the_auth_probe_without_starting_claude(shim: tuple[Path, Path]) -> None:
    installed, log = shim
    result = subprocess.run([str(installed), *PROBE], env=_env(ANTHROPIC_API_KEY="k"), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # The fields claude-agent-acp reads (`fromCliStatus`), as claude 2.1.278 prints them for an env key.
    assert json.loads(result.stdout) == {
        "loggedIn": True,
        "authMethod": "api_key",
        "apiProvider": "firstParty",
        "apiKeySource": "ANTHROPIC_API_KEY",
    }
    assert not log.exists()


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        pytest.param(["--version"], {"ANTHROPIC_API_KEY": "k"}, id="another-command"),
        pytest.param(["auth", "status"], {"ANTHROPIC_API_KEY": "k"}, id="text-status"),
        pytest.param(PROBE, {}, id="no-api-key"),
        pytest.param(PROBE, {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_AUTH_TOKEN": "t"}, id="auth-token-outranks-key"),
        pytest.param(PROBE, {"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_OAUTH_TOKEN": "t"}, id="oauth-token"),
        pytest.param(PROBE, {"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_USE_BEDROCK": "1"}, id="bedrock"),
        pytest.param(PROBE, {"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_USE_VERTEX": "1"}, id="vertex"),
        pytest.param(PROBE, {"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_USE_FOUNDRY": "1"}, id="foundry"),
        pytest.param(["-p", "a b", ""], {"ANTHROPIC_API_KEY": "k"}, id="arguments-kept-verbatim"),
    ],
)
def test_every_other_call_runs_claude_itself_with_its_arguments_and_exit_code(
    shim: tuple[Path, Path], argv: list[str], env: dict[str, str]
) -> None:
    installed, log = shim
    result = subprocess.run([str(installed), *argv], env=_env(**env), capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (7, "REAL\n")
    assert log.read_text() == "".join(f"{arg}\n" for arg in argv)


HOOK_CHECK = """
import sys
if sys.argv[1] == "hooked":
    sys.path.insert(0, sys.argv[2])
    import arena_pydantic_no_field_docs
from pydantic import BaseModel, ConfigDict, Field
from typing import Annotated

class Request(BaseModel):
    model_config = ConfigDict(populate_by_name=True, use_attribute_docstrings=True)
    session_id: Annotated[str, Field(alias="sessionId")]
    \"\"\"The ID of the session.\"\"\"

value = Request.model_validate({"sessionId": "s1"})
print(repr(Request.model_fields["session_id"].description), value.model_dump_json(by_alias=True))
"""


@pytest.mark.parametrize(("mode", "description"), [("hooked", "None"), ("plain", "'The ID of the session.'")])
def test_the_runner_hook_drops_field_docstrings_and_nothing_else(mode: str, description: str, tmp_path: Path) -> None:
    check = tmp_path / "check.py"  # a file: pydantic reads docstrings from source, which `-c` code has none of
    check.write_text(HOOK_CHECK)
    # -B: importing the hook from the source tree must leave no __pycache__ there (the wheel ships that dir).
    result = subprocess.run([sys.executable, "-B", str(check), mode, str(HARNESS_DIR)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.rsplit(" ", 1) == [description, '{"sessionId":"s1"}\n']


def test_the_harness_dockerfile_copies_every_cut_file() -> None:
    copies = [
        line.split()[1:-1] for line in (HARNESS_DIR / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")
    ]
    assert any(sorted(files) == sorted(HARNESS_FILES) for files in copies), copies
