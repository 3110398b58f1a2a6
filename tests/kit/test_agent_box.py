"""The agent's box as the platform declares it: a non-root agent that owns its workdir, and on the lean path
a read-only root whose writable places are bounded tmpfs mounts (what the engine is asked for; the escape
battery checks the running box)."""

import asyncio
import uuid
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf

from arena_kit.box.isolation import ISOLATION, confine
from arena_kit.runtimes import seccomp
from arena_kit.runtimes.agent_uids import FIRST_UID
from arena_kit.runtimes.lean_docker.runtime import BAKED_INTERPRETERS, LeanDockerRuntime
from arena_kit.verifiers_seam.harness_install import lean_harness_installs


class _Box:
    """A container runtime that records what it ran (as whom)."""

    def __init__(self, kind: str = "docker", exit_code: int = 0, **attrs: object) -> None:
        self.info = SimpleNamespace(type=kind, id="abc", workdir="/app")
        self.exit_code = exit_code
        self.user: str | None = None
        self.ran: list[tuple[str | None, list[str]]] = []
        self.__dict__.update(attrs)

    def with_user(self, user: str | None, home: str | None = None) -> "_Box":
        view = _Box.__new__(_Box)
        view.__dict__ = dict(self.__dict__, user=user)
        view.ran = self.ran
        return view

    async def run(self, argv: list[str], env: dict[str, str]) -> vf.ProgramResult:
        self.ran.append((self.user, argv))
        return vf.ProgramResult(self.exit_code, "", "refused" if self.exit_code else "")


def test_every_task_runs_its_agent_as_the_unprivileged_user_of_the_images():
    assert ISOLATION.task_fields()["agent_user"] == "agent"
    assert vf.TaskData(prompt="x", **ISOLATION.task_fields()).agent_user == "agent"


def test_a_read_only_box_mounts_bounded_tmpfs_for_tmp_the_workdir_and_the_agent_s_home():
    mounts = ISOLATION.writable("/app", "agent")
    assert set(mounts) == {"/tmp", "/app", "/home/agent"}
    for path, options in mounts.items():
        assert "nosuid" in options and "nodev" in options, path
    assert f"size={ISOLATION.tmp_mb}m" in mounts["/tmp"] and "mode=1777" in mounts["/tmp"]
    assert "uid=1000,gid=1000" in mounts["/app"] and f"size={ISOLATION.workdir_mb}m" in mounts["/app"]
    assert "mode=0700" in mounts["/home/agent"] and "uid=1000" in mounts["/home/agent"]
    # Bounded, and all of it counted against the box's memory: less than the box may hold.
    assert ISOLATION.tmp_mb + ISOLATION.workdir_mb + ISOLATION.home_mb < ISOLATION.memory * 1024


def test_a_root_agent_s_read_only_box_has_no_home_mount_and_root_owned_places():
    mounts = ISOLATION.writable("/work", None)
    assert set(mounts) == {"/tmp", "/work"} and "uid=" not in mounts["/work"]


def test_confine_hands_the_workdir_to_the_agent_on_a_stock_box_and_a_prime_box(monkeypatch, tmp_path):
    async def no_pids(runtime, pids):
        return None

    monkeypatch.setattr("arena_kit.box.isolation._limit_pids", no_pids)
    monkeypatch.setattr("arena_kit.runtimes.agent_uids.LEASE_DIR", tmp_path)
    box = _Box("prime")
    asyncio.run(confine(box, 512, "agent"))  # type: ignore[arg-type]
    assert box.ran == [(None, ["chown", "agent:", "/app"])]  # as root: the agent cannot give itself files
    uids, boxes = set(), []
    for kind in ("docker", "podman"):  # a stock box: the agent gets a uid of its own, and the workdir with it
        box = _Box(kind)
        boxes.append(box)  # alive: its lease is held
        asyncio.run(confine(box, 512, "agent"))  # type: ignore[arg-type]
        [(user, argv)] = box.ran
        assert user is None and argv[:2] == ["sh", "-c"] and argv[3:5] == ["sh", "agent"] and argv[-1] == "/app", kind
        uids.add(int(argv[5]))
        assert int(argv[6]) == ISOLATION.agent_uid and box.__dict__["arena_agent_uid"].uid == int(argv[5])
    assert len(uids) == 2 and ISOLATION.agent_uid not in uids  # two boxes at once: two uids


def test_confine_skips_the_chown_where_the_workdir_was_mounted_for_the_agent_and_where_there_is_no_box(monkeypatch):
    async def no_pids(runtime, pids):
        return None

    monkeypatch.setattr("arena_kit.box.isolation._limit_pids", no_pids)
    lean = _Box("docker", created_workdir_owner="agent", own_uid=None)  # a lean box: its uid is set at create
    local = _Box("subprocess")
    for box in (lean, local):
        asyncio.run(confine(box, 512, "agent"))  # type: ignore[arg-type]
        assert box.ran == []
    root = _Box("docker")
    asyncio.run(confine(root, 512, None))  # type: ignore[arg-type]
    assert root.ran == []


def test_confine_fails_the_setup_when_the_workdir_cannot_be_handed_over(monkeypatch, tmp_path):
    async def no_pids(runtime, pids):
        return None

    monkeypatch.setattr("arena_kit.box.isolation._limit_pids", no_pids)
    monkeypatch.setattr("arena_kit.runtimes.agent_uids.LEASE_DIR", tmp_path)
    with pytest.raises(vf.SandboxError, match="cannot hand the workdir /app to 'agent': refused"):
        asyncio.run(confine(_Box("prime", exit_code=1), 512, "agent"))  # type: ignore[arg-type]
    with pytest.raises(vf.SandboxError, match=r"cannot give 'agent' the uid 19\d+: refused"):
        asyncio.run(confine(_Box("docker", exit_code=1), 512, "agent"))  # type: ignore[arg-type]


class _Api:
    def __init__(self) -> None:
        self.host_config: dict[str, object] = {}

    def create_host_config(self, **kwargs: object) -> dict[str, object]:
        self.host_config = kwargs
        return kwargs

    def create_container(self, *args: object, **kwargs: object) -> None:
        pass

    def start(self, container: str) -> None:
        pass

    def inspect_container(self, container: str) -> dict[str, object]:
        return {}


@pytest.mark.parametrize("writable", [None, ISOLATION.writable("/app", "agent")], ids=["writable-root", "read-only"])
def test_the_lean_box_asks_the_engine_for_a_read_only_root_with_exactly_the_declared_mounts(writable):
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/harness"), writable=writable, workdir_owner="agent")
    box.container = "vf-test"
    api = _Api()
    box._create(api, True, True)  # type: ignore[arg-type]
    assert api.host_config.get("read_only", False) is (writable is not None)
    assert api.host_config.get("tmpfs") == writable
    assert api.host_config["cap_drop"] == ["ALL"] and api.host_config["security_opt"][0] == "no-new-privileges"
    assert api.host_config["security_opt"][1] == f"seccomp={seccomp.profile_json()}"
    assert box.created_workdir_owner == ("agent" if writable else None)


def test_a_box_with_its_own_agent_uid_gives_that_uid_the_agent_s_mounts_and_leaves_tmp_alone():
    box = LeanDockerRuntime(
        vf.DockerConfig(image="arena/harness"),
        writable=ISOLATION.writable("/app", "agent"),
        workdir_owner="agent",
        own_uid="agent",
    )
    box.container, box.agent_uid = "vf-test", FIRST_UID + 7
    api = _Api()
    box._create(api, True, True)  # type: ignore[arg-type]
    tmpfs = api.host_config["tmpfs"]
    assert isinstance(tmpfs, dict)
    owned = f"uid={FIRST_UID + 7},gid={FIRST_UID + 7}"
    assert owned in tmpfs["/app"] and owned in tmpfs["/home/agent"] and "uid=1000" not in str(tmpfs)
    assert tmpfs["/tmp"] == ISOLATION.writable("/app", "agent")["/tmp"]  # no owner: mode 1777 as declared


def test_a_runner_the_image_synced_is_used_without_uv_sync_and_one_it_did_not_falls_back_to_it():
    box = LeanDockerRuntime(vf.DockerConfig(image="arena/harness"), writable=ISOLATION.writable("/app", "agent"))
    box.container = "vf-test"
    agent = box.with_user("agent", home="/home/agent")
    commands: list[str] = []

    async def after_write(path, data, then, argv, env, operation="exec"):
        commands.append(then)
        return vf.ProgramResult(0, "/opt/vf-uv/environments-v2/x/bin/python\n", "")

    box._run_after_write = after_write
    argv = asyncio.run(agent.prepare_uv_script("print(1)\n"))
    [command] = commands
    assert "/tmp/vf-scripts-agent/" in command  # verifiers' per-user script directory
    baked, _, fallback = command.partition("||")
    assert f"cat {BAKED_INTERPRETERS}/vf-scripts-agent/" in baked and "uv sync" not in baked
    assert "uv sync" in fallback  # a runner the image does not hold still gets synced
    assert any("/opt/vf-uv/environments-v2/x" in part for part in argv)


def test_a_harness_install_in_a_read_only_box_is_checked_as_root_and_never_locked_or_chmodded():
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    box = _Box(writable={"/tmp": "size=1m"}).with_user("agent")
    asyncio.run(
        install.ensure_installed(
            box, directory="/var/tmp/vf-x", install="make it", env={}, label="X", ready="[ -f /var/tmp/vf-x/.ready ]"
        )
    )
    assert box.ran == [(None, ["sh", "-c", "[ -f /var/tmp/vf-x/.ready ] || (make it)"])]


def test_a_check_that_passed_in_a_box_is_not_run_again_in_a_box_with_the_same_image_mounts_env_and_script():
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    writable = {"/tmp": "size=1m"}

    def check(box: _Box, script: str = "make it", env: dict[str, str] | None = None) -> int:
        before = len(box.ran)
        asyncio.run(
            install.ensure_installed(
                box,
                directory="/var/tmp/vf-x",
                install=script,
                env=env or {},
                label="X",
                ready="[ -f /var/tmp/vf-x/.ready ]",
            )
        )
        return len(box.ran) - before

    image = f"sha256:{uuid.uuid4().hex}"  # this test's own: no other test's pass is remembered
    assert check(_Box(writable=writable, image_id=image, env={})) == 1
    assert check(_Box(writable=writable, image_id=image, env={})) == 0  # another fresh box, same answer
    assert check(_Box(writable=writable, image_id=image, env={}).with_user("agent")) == 0  # checks run as root
    # Anything the answer depends on, changed: checked again.
    assert check(_Box(writable=writable, image_id=f"{image}2", env={})) == 1
    assert check(_Box(writable={"/tmp": "size=2m"}, image_id=image, env={})) == 1
    assert check(_Box(writable=writable, image_id=image, env={"PATH": "/x"})) == 1
    assert check(_Box(writable=writable, image_id=image, env={}), script="make it again") == 1
    assert check(_Box(writable=writable, image_id=image, env={}), env={"V": "2"}) == 1
    assert check(_Box(writable=writable, env={})) == 1 and check(_Box(writable=writable, env={})) == 1  # image unknown
    # An install dir in a writable mount: the task's setup could have written there, so every box checks.
    in_mount = {"/var/tmp": "size=1m"}
    assert check(_Box(writable=in_mount, image_id=image, env={})) == 1
    assert check(_Box(writable=in_mount, image_id=image, env={})) == 1
    # A failed check is never remembered: it runs, and fails, every time.
    failing = f"sha256:{uuid.uuid4().hex}"
    for _ in range(2):
        box = _Box(exit_code=1, writable=writable, image_id=failing, env={})
        with pytest.raises(RuntimeError, match="X is not installed"):
            check(box)
        assert len(box.ran) == 1


def test_a_box_that_mounts_a_volume_or_a_bind_has_no_image_id_to_remember_a_check_by():
    from arena_kit.runtimes.lean_docker.hardening import mounted_image_id

    assert mounted_image_id({"Image": "sha256:a", "Mounts": []}) == "sha256:a"
    assert mounted_image_id({"Image": "sha256:a", "Mounts": [{"Type": "volume", "Destination": "/var/tmp"}]}) is None
    assert mounted_image_id({"Mounts": []}) is None


def test_a_harness_s_cleanup_is_skipped_only_in_a_box_removed_after_its_rollout():
    import verifiers.v1.harnesses.claude_code.harness as claude_code
    import verifiers.v1.harnesses.codex.harness as codex
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    for module in (install, claude_code, codex):
        kept, removed = _Box(), _Box(removed_after_rollout=True).with_user("agent")
        asyncio.run(module.remove_dir(kept, ".vf-claude/x", "Claude config"))
        asyncio.run(module.remove_dir(removed, ".vf-claude/x", "Claude config"))
        assert kept.ran == [(None, ["rm", "-rf", ".vf-claude/x"])], module.__name__
        assert removed.ran == [], module.__name__


def test_a_lean_env_marks_every_box_it_lends_a_rollout_as_removed_after_it():
    import inspect

    from arena_kit.envs.lean import LeanEnv

    source = inspect.getsource(LeanEnv.run)
    assert source.count(".removed_after_rollout = True") == 2  # the pooled claim and the unpooled box
    assert LeanDockerRuntime(vf.DockerConfig(image="arena/harness")).removed_after_rollout is False


def test_a_harness_the_read_only_box_lacks_fails_setup_naming_it_and_the_way_out():
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    box = _Box(exit_code=1, writable={"/tmp": "size=1m"})
    with pytest.raises(
        RuntimeError,
        match=r"X is not installed in the image at /var/tmp/vf-x, and a read-only box cannot install it.*docker = \"stock\"",
    ):
        asyncio.run(install.ensure_installed(box, directory="/var/tmp/vf-x", install="make it", env={}, label="X"))


def test_a_box_with_a_writable_root_keeps_verifiers_install_with_its_lock():
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    box = _Box()
    asyncio.run(install.ensure_installed(box, directory="/var/tmp/vf-x", install="make it", env={}, label="X"))
    [(user, argv)] = box.ran
    assert "install.lock" in argv[-1]  # verifiers' own guarded install


def test_every_harness_module_calls_the_read_only_aware_install():
    import verifiers.v1.harnesses.claude_code.harness as claude_code
    import verifiers.v1.harnesses.codex.harness as codex
    import verifiers.v1.harnesses.node as node
    from verifiers.v1.harnesses.utils import install

    lean_harness_installs()
    for module in (install, node, claude_code, codex):
        assert getattr(module.ensure_installed, "__arena_read_only_aware__", False), module.__name__
