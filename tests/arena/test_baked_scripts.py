"""The harness runner scripts baked into the image come back when a runtime hides the image's /tmp."""

import asyncio
import subprocess
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

import verifiers.v1 as vf

from arena_kit.box.baked import restore_baked_scripts, restore_command


def _sh(command: str) -> int:
    return subprocess.run(["sh", "-c", command], timeout=30).returncode


def test_the_baked_scripts_are_copied_back_without_overwriting_what_is_there(tmp_path):
    baked, scripts = tmp_path / "opt" / "vf-scripts", tmp_path / "tmp" / "vf-scripts"
    baked.mkdir(parents=True)
    (baked / "abc.py").write_text("runner")
    (baked / "abc.py.lock").write_text("lock")
    assert _sh(restore_command(str(scripts), str(baked))) == 0
    assert (scripts / "abc.py").read_text() == "runner" and (scripts / "abc.py.lock").read_text() == "lock"
    (scripts / "abc.py").write_text("newer")
    assert _sh(restore_command(str(scripts), str(baked))) == 0
    assert (scripts / "abc.py").read_text() == "newer"


def test_an_image_without_baked_scripts_is_left_alone(tmp_path):
    assert _sh(restore_command(str(tmp_path / "scripts"), str(tmp_path / "missing"))) == 0
    assert not (tmp_path / "scripts").exists()


@dataclass
class _Box:
    """A stand-in runtime (only `info.type`, `scripts_dir` and `run`), recording the commands it gets."""

    kind: str | None
    exit_code: int = 0
    scripts_dir: str = "/tmp/vf-scripts"
    ran: list[list[str]] = field(default_factory=list)

    @property
    def info(self) -> SimpleNamespace:
        return SimpleNamespace(type=self.kind)

    async def run(self, argv: list[str], env: dict[str, str]) -> vf.ProgramResult:
        self.ran.append(argv)
        return vf.ProgramResult(exit_code=self.exit_code, stdout="", stderr="cp: No space left on device")


@pytest.mark.parametrize("kind", ["docker", "podman", "subprocess", None])
def test_runtimes_not_known_to_hide_the_image_tmp_run_nothing(kind):
    box = _Box(kind)
    asyncio.run(restore_baked_scripts(box))  # type: ignore[arg-type]
    assert box.ran == []


def test_a_prime_box_gets_its_scripts_restored_and_a_failure_is_a_sandbox_error():
    box = _Box("prime")
    asyncio.run(restore_baked_scripts(box))  # type: ignore[arg-type]
    assert box.ran == [["sh", "-c", restore_command("/tmp/vf-scripts")]]
    with pytest.raises(vf.SandboxError, match="No space left"):
        asyncio.run(restore_baked_scripts(_Box("prime", exit_code=1)))  # type: ignore[arg-type]
