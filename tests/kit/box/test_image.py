"""`arena_kit.box.image`: a task's box runs its environment's image unless the task config names another or a lock pins a digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import verifiers.v1 as vf
from pydantic import ValidationError
from verifiers.v1.utils.compile import resolve_runtime_config

from arena_kit.box.image import BoxImageConfig, locked_image, task_image
from arena_kit.contract.spec import image_tag
from arena_kit.box.isolation import IsolationTaskConfig

REF = "registry.example/arena/demo-env@sha256:" + "a" * 64


def _lock(path: Path, images: object) -> Path:
    path.write_text(json.dumps({"version": 1, "images": images}))
    return path


def test_the_default_is_the_tag_arena_images_build_gives_the_environment() -> None:
    assert image_tag("demo-env") == "arena/demo-env:latest"
    assert task_image("demo-env", BoxImageConfig()) == "arena/demo-env:latest"


def test_a_configured_image_wins(tmp_path: Path) -> None:
    assert task_image("demo-env", BoxImageConfig(image="other/image:tag")) == "other/image:tag"


def test_a_lock_gives_the_environment_s_digest_ref(tmp_path: Path) -> None:
    lock = _lock(tmp_path / "images.lock.json", {"demo-env": {"ref": REF}, "other": {"ref": "x@sha256:" + "b" * 64}})
    assert task_image("demo-env", BoxImageConfig(image_lock=lock)) == REF


@pytest.mark.parametrize(
    ("images", "match"),
    [
        ({}, "pins no image of 'demo-env'"),
        ({"demo-env": {"ref": "registry.example/arena/demo-env:latest"}}, "is not <repository>@sha256"),
        ({"demo-env": {}}, "is not <repository>@sha256"),
        ([], "not readable"),
    ],
)
def test_a_lock_that_pins_no_digest_for_the_environment_is_refused_with_the_command_that_publishes_it(
    tmp_path: Path, images: object, match: str
) -> None:
    lock = _lock(tmp_path / "images.lock.json", images)
    with pytest.raises(ValueError, match=match) as raised:
        locked_image(lock, "demo-env")
    assert "arena images publish --registry HOST/NAMESPACE --env demo-env" in str(raised.value)


def test_a_missing_or_broken_lock_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        locked_image(tmp_path / "nowhere.json", "demo-env")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="not readable"):
        locked_image(tmp_path / "broken.json", "demo-env")


def test_an_image_and_a_lock_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not both"):
        BoxImageConfig(image="a", image_lock=tmp_path / "l.json")


def test_every_arena_task_config_carries_the_knobs() -> None:
    config = IsolationTaskConfig.model_validate({"image_lock": "configs/images.lock.json"})
    assert config.image_lock == Path("configs/images.lock.json") and config.image is None


def test_the_task_image_replaces_the_runtime_s_on_docker_and_prime() -> None:
    """What makes a config that names no image right for every environment: verifiers' own resolution."""
    task = vf.Task(vf.TaskData(prompt="p", image=task_image("demo-env", BoxImageConfig())))
    for runtime in (
        {"type": "docker"},
        {"type": "docker", "image": "python:3.11-slim"},
        {"type": "prime", "image": REF},
    ):
        config = vf.AgentConfig.model_validate({"runtime": runtime}).runtime
        assert resolve_runtime_config(config, task).image == "arena/demo-env:latest"
