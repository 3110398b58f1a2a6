"""`arena images publish` against a real local registry: every env image is served by digest
(manifest and every blob, harness layers included), the prime configs' tasks pull it by that digest,
and an image round-trips (push, delete locally, pull by digest) and runs a schema-migration rollout.

The env images share layers with every other test, so they are never deleted here: the
delete-and-pull round trip uses an image of our own, one unique layer on top of an env image.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
import tomllib
import uuid
from pathlib import Path

import httpx
import pytest
import verifiers.v1 as vf
from verifiers.v1.utils.compile import resolve_runtime_config

from arena.cli import main
from arena.engine import docker_client, image_exists, pull_image, push_image, untag_image
from arena.evalrun import EvalRequest, run_eval
from arena.images.lock import read_lock
from arena.images.specs import env_images
from arena.policies import model_name
from arena.server import start_in_thread

pytestmark = pytest.mark.docker
MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
    ]
)
CONFIGS = Path(__file__).resolve().parents[3] / "configs"


@pytest.fixture(scope="module")
def published(registry, images, tmp_path_factory):
    """Publish every env image once; returns (lock, its path, seconds)."""
    root = tmp_path_factory.mktemp("publish")
    started = time.monotonic()
    code = main(["images", "publish", "--registry", f"{registry.host}/arena", "--lock", str(root / "lock.json")])
    seconds = time.monotonic() - started
    assert code == 0
    print(
        f"\npublish: {len(env_images())} env images in {seconds:.1f}s; registry holds {registry.size_bytes() / 1e6:.0f} MB"
    )
    lock = read_lock(root / "lock.json")
    yield lock, root / "lock.json", seconds
    for entry in lock.images.values():  # the push tags only: the images keep their arena/* tags
        untag_image(f"{entry.registry}/{entry.env}:{entry.content_hash}")


def _manifest(registry, repository: str, reference: str) -> httpx.Response:
    return httpx.get(
        f"{registry.url}/v2/{repository}/manifests/{reference}", headers={"Accept": MANIFEST_TYPES}, timeout=30
    )


def test_publish_pushes_every_env_image_and_the_registry_serves_it_by_digest(published, registry, images):
    lock, _path, _seconds = published
    assert sorted(lock.images) == sorted(env_images())
    for env, entry in lock.images.items():
        assert entry.local_tag == images[env] and entry.ref.startswith(f"{registry.host}/arena/{env}@sha256:")
        repository = f"arena/{env}"
        response = _manifest(registry, repository, entry.digest)
        assert response.status_code == 200, response.text
        assert response.headers["Docker-Content-Digest"] == entry.digest
        assert "sha256:" + hashlib.sha256(response.content).hexdigest() == entry.digest
        manifest = response.json()
        local_layers = docker_client().images.get(entry.local_tag).attrs["RootFS"]["Layers"]
        assert len(manifest["layers"]) == len(local_layers)  # base and harness layers went with it
        for blob in [manifest["config"], *manifest["layers"]]:
            head = httpx.head(f"{registry.url}/v2/{repository}/blobs/{blob['digest']}", timeout=30)
            assert head.status_code == 200, blob
            assert int(head.headers["Content-Length"]) == blob["size"]


def test_a_prime_config_s_tasks_pull_the_digest_just_published_for_their_environment(published):
    lock, path, _seconds = published
    prime = tomllib.loads((CONFIGS / "bash-prime.toml").read_text())
    runtime_table = prime["env"]["agent"]["runtime"]
    for env in env_images():
        table = {
            **prime["env"]["taskset"],
            "id": env,
            "task": {**prime["env"]["taskset"]["task"], "image_lock": str(path)},
        }
        task = next(iter(vf.load_taskset(vf.taskset_config_type(env).model_validate(table)).take(1)))
        runtime = resolve_runtime_config(vf.AgentConfig.model_validate({"runtime": runtime_table}).runtime, task)
        assert (runtime.type, runtime.image) == ("prime", lock.images[env].ref)


def test_a_published_env_image_pulls_by_digest_as_the_local_image(published):
    lock, _path, _seconds = published
    entry = lock.images["schema-migration"]
    assert pull_image(entry.ref) == docker_client().images.get(entry.local_tag).id


def test_an_image_round_trips_by_digest_and_a_rollout_runs_from_the_pulled_copy(published, registry, images, tmp_path):
    nonce = uuid.uuid4().hex[:12]
    (tmp_path / "ctx").mkdir()
    (tmp_path / "ctx" / "nonce").write_text(nonce)
    (tmp_path / "ctx" / "Dockerfile").write_text(
        f"FROM {images['schema-migration']}\nCOPY nonce /etc/arena-roundtrip\n"
    )
    tag = f"{registry.host}/roundtrip/schema-migration:{nonce}"
    image, _logs = docker_client().images.build(
        path=str(tmp_path / "ctx"), tag=tag, rm=True, labels={"arena.roundtrip": nonce}
    )
    try:
        began = time.monotonic()
        digest = push_image(tag)
        pushed_s = time.monotonic() - began
        docker_client().images.remove(tag)
        assert not image_exists(str(image.id))
        ref = f"{registry.host}/roundtrip/schema-migration@{digest}"
        began = time.monotonic()
        assert pull_image(ref) == image.id  # the same config, so the same image, fetched by digest
        pulled_s = time.monotonic() - began

        # A live subscription: the engine keeps only its last 256 events, which a busy machine cycles through.
        watch = subprocess.Popen(
            [
                "docker",
                "events",
                "--since",
                str(int(time.time()) - 1),
                "--filter",
                "event=start",
                "--filter",
                f"label=arena.roundtrip={nonce}",
                "--format",
                "{{json .Actor.Attributes}}",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            began = time.monotonic()
            with start_in_thread() as server:
                outcome = run_eval(
                    EvalRequest(
                        taskset="schema-migration",
                        harness="bash",
                        model=model_name("schema-migration", "oracle"),
                        image=ref,
                        base_url=server.url,
                        run_name="roundtrip-oracle",
                        output_dir=tmp_path,
                        num_tasks=1,
                        max_concurrent=1,
                        taskset_args={
                            "split": "dev",
                            "task": {"image": ref},
                        },  # the task's image wins over the runtime's
                    ),
                    progress=lambda _line: None,
                )
            rollout_s = time.monotonic() - began
        finally:
            watch.terminate()
            events, _ = watch.communicate(timeout=10)
        outcome.raise_for_failures()
        [episode] = outcome.episodes
        assert episode.rewards["migration"]["score"] == 1.0, episode.info.get("grade")
        assert {json.loads(line)["image"] for line in events.splitlines()} == {ref}  # the box ran the pulled copy
        print(
            f"\nround trip: push {pushed_s:.1f}s (one new layer), pull {pulled_s:.1f}s, rollout {rollout_s:.1f}s, score 1.0"
        )
    finally:
        if image_exists(str(image.id)):
            docker_client().images.remove(str(image.id), force=True)


def test_a_refused_push_exits_2_and_writes_no_lock(start_registry, images, tmp_path, capsys):
    readonly = start_registry(readonly=True)
    code = main(
        [
            "images",
            "publish",
            "--registry",
            f"{readonly.host}/arena",
            "--env",
            "schema-migration",
            "--lock",
            str(tmp_path / "lock.json"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"push of {readonly.host}/arena/schema-migration" in err and "docker login" in err, err
    assert not (tmp_path / "lock.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temp file left behind
    assert not image_exists(f"{readonly.host}/arena/schema-migration:{images['schema-migration'].rpartition(':')[2]}")
