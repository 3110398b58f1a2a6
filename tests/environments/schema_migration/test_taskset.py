"""Taskset wiring: id resolution, setup writes only the visible database, the reward gathers and grades."""

import asyncio
import json
import sqlite3
import subprocess
import sys
from types import SimpleNamespace

import pytest
import verifiers.v1 as vf
from arena_kit.contract import task as contract_task
from arena_kit.contract.taskset import split_seeds
from arena_kit.box.isolation import ISOLATION
from arena_kit.records import RUN_DIR_ENV
from arena_kit.rewrite.rules import match_post
from arena_testkit.migration_sim import play
from schema_migration import dbfile, prompt, taskset
from schema_migration.families import BY_NAME
from schema_migration.generate import HELDOUT_ROWS, expected_rows, seeds, spec, visible_rows
from schema_migration.heldout import rows as heldout_rows  # the grader's: drawn from the host's task secret
from schema_migration.policies import oracle
from sqlite_sandbox import engine, render
from schema_migration.taskset import SchemaMigrationConfig, SchemaMigrationTaskset, efficiency, heldout_secrets
from sqlite_sandbox.state import DEFAULT_DB_PATH, SandboxState, checkpoint_path
from sqlite_sandbox.toolset import SqliteSandboxToolset
from verifiers.v1.runtimes import DockerRuntimeInfo, SubprocessRuntimeInfo


def _tasks(n: int = 3):
    return list(SchemaMigrationTaskset(SchemaMigrationConfig(id="schema-migration", split="dev", num_tasks=n)))


@pytest.mark.slow
def test_the_id_schema_migration_resolves_to_the_one_exported_taskset():
    # A fresh interpreter: under pytest, tests/environments/schema_migration/ shadows the package's __init__.
    code = (
        "import verifiers.v1 as vf, schema_migration as m;"
        "cfg = vf.taskset_config_type('schema-migration').model_validate({'id': 'schema-migration', 'num_tasks': 2});"
        "ts = vf.load_taskset(cfg);"
        "print(m.__all__, type(ts).__name__, [t.data.name for t in ts], type(next(iter(ts))).NEEDS_CONTAINER)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [
        "['LeanEnv',",
        "'SchemaMigrationTaskset']",
        "SchemaMigrationTaskset",
        "['schema-migration#0',",
        "'schema-migration#1']",
        "True",
    ]


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_a_split_yields_the_contracts_seeds_with_dev_and_test_holding_100000(split):
    # schema-migration's splits start where the contract's do; dev and test stop at 100,000 seeds.
    for n in (1, 30, 100_000):
        assert SchemaMigrationConfig(id="schema-migration", split=split, num_tasks=n).seeds() == split_seeds(split, n)
    many = SchemaMigrationConfig(id="schema-migration", split=split, num_tasks=200_000).seeds()
    assert many == (split_seeds(split, 200_000) if split == "train" else split_seeds(split, 100_000))
    assert SchemaMigrationConfig(id="schema-migration").split == "train"


def test_a_tool_result_carrying_a_held_out_value_is_withheld_and_honest_results_pass(monkeypatch):
    monkeypatch.delenv(RUN_DIR_ENV, raising=False)  # the audit record stays in the fake trace
    task = _tasks(1)[0]
    secret = heldout_secrets(task.data.seed, task.data.heldout_rows)[0]
    call = vf.ToolCall(
        id="c1", name="sqlite_sandbox_execute", arguments=json.dumps({"sql": "SELECT city FROM addresses"})
    )

    def result(text: str) -> vf.Request:
        return vf.Request(
            messages=[
                vf.UserMessage(content="go"),
                vf.AssistantMessage(tool_calls=[call]),
                vf.ToolMessage(tool_call_id="c1", content=text, name=call.name),
            ]
        )

    trace = SimpleNamespace(info={}, id="t1", agent=None, task=SimpleNamespace(data=task.data), state=SandboxState())
    assert asyncio.run(task.held_out(trace)) == heldout_secrets(task.data.seed, task.data.heldout_rows)
    withheld = asyncio.run(task.arena_rules(result(f"(1, {secret!r})"), trace))
    assert withheld is not None and secret not in str(withheld.messages[-1].content)
    assert [r["environment"] for r in trace.info["arena_rewrites"]] == ["schema-migration"]
    assert asyncio.run(task.arena_rules(result("(1, 'ok')"), trace)) is None


def test_task_data_holds_the_seed_and_knobs_but_no_rows():
    task = _tasks(1)[0]
    data = json.loads(task.data.model_dump_json())
    assert data["seed"] == 1_000_000
    assert {"heldout_rows", "statement_budget", "free_statements"} <= set(data)
    s = spec(data["seed"])
    assert not any(repr(row) in task.data.prompt for rows in visible_rows(s).values() for row in rows)


def test_the_taskset_shares_one_sqlite_sandbox_toolset():
    toolsets = SchemaMigrationTaskset.toolsets(SchemaMigrationConfig(id="schema-migration"))
    assert [type(t) for t in toolsets] == [SqliteSandboxToolset]
    assert toolsets[0].server_name == "sqlite_sandbox"


class FakeRuntime:
    def __init__(self, info, user: str | None = None, files: dict[str, tuple[str | None, bytes]] | None = None) -> None:
        self.info = info
        self.user = user
        self.home: str | None = None
        self.files: dict[str, tuple[str | None, bytes]] = {} if files is None else files
        """path → (the user that wrote it, its bytes)"""

    def with_user(self, user: str | None, home: str | None = None) -> "FakeRuntime":
        view = FakeRuntime(self.info, user, self.files)
        view.home = home
        return view

    async def write(self, path: str, data: bytes) -> None:
        self.files[path] = (self.user, data)


def test_setup_writes_the_visible_database_and_start_checkpoint_as_the_agent_and_fills_the_state(monkeypatch):
    task = _tasks(1)[0]
    runtime = FakeRuntime(DockerRuntimeInfo(id="abc123def456", image="arena/schema-migration:latest"))
    confined = []

    async def confine(box, pids, user):  # the fake box has no container to `docker update`
        confined.append((box, pids, user))

    monkeypatch.setattr(contract_task, "confine", confine)
    trace = SimpleNamespace(state=SandboxState(), info={})
    asyncio.run(task.setup(trace, runtime))
    assert confined == [(runtime, ISOLATION.pids, "agent")]
    start = checkpoint_path(taskset.CHECKPOINT_DIR, "start")
    assert taskset.CHECKPOINT_DIR.startswith("/home/agent/")
    assert set(runtime.files) == {DEFAULT_DB_PATH, start}
    assert {writer for writer, _ in runtime.files.values()} == {"agent"}  # the agent's files, not root's
    assert runtime.files[DEFAULT_DB_PATH][1] == runtime.files[start][1]
    s = spec(task.data.seed)
    assert runtime.files[DEFAULT_DB_PATH][1] == dbfile.to_bytes(s.source, visible_rows(s))
    state = trace.state
    assert (state.box, state.db_path, state.statement_budget) == (runtime.info, DEFAULT_DB_PATH, 30)
    assert (state.checkpoint_dir, state.agent_user) == (
        taskset.CHECKPOINT_DIR,
        "agent",
    )  # the tools run as the agent too
    conn = sqlite3.connect(":memory:")
    conn.deserialize(runtime.files[DEFAULT_DB_PATH][1])
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] == len(s.source.tables)


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (DockerRuntimeInfo(id=None), "reported no box id"),
        (SubprocessRuntimeInfo(id="/home/u/.cache/vf/run"), "cannot serve the subprocess runtime"),
    ],
    ids=["docker-without-id", "subprocess"],
)
def test_setup_refuses_a_runtime_the_tools_cannot_reach_before_touching_the_box(info, words):
    task = _tasks(1)[0]
    runtime = FakeRuntime(info)
    trace = SimpleNamespace(state=SandboxState(), info={})
    with pytest.raises(vf.TaskError, match=words):
        asyncio.run(task.setup(trace, runtime))
    assert runtime.files == {} and trace.state.box is None


def test_no_submission_scores_zero_with_a_reason():
    task = _tasks(1)[0]
    trace = SimpleNamespace(state=SandboxState(statements_used=3), info={})
    assert asyncio.run(task.migration(trace)) == 0.0
    assert trace.info["grade"]["reason"] == "no migration was submitted"


@pytest.mark.parametrize(("used", "expected"), [(2, 1.0), (30, 0.5)])
def test_the_reward_grades_the_submission_from_state_times_the_statement_efficiency(used, expected):
    task = _tasks(2)[1]
    s = spec(task.data.seed)
    sql = BY_NAME[s.family].migration(s.params)
    trace = SimpleNamespace(state=SandboxState(submission=sql, statements_used=used), info={})
    assert asyncio.run(task.migration(trace)) == pytest.approx(expected)
    assert trace.info["grade"]["score"] == 1.0 and trace.info["grade"]["statements_used"] == used
    assert trace.info["grade"]["reason"].startswith("score 1.000")


def test_efficiency_is_one_up_to_the_free_statements_then_falls_to_half_at_the_budget():
    values = [efficiency(used, 8, 30) for used in range(0, 31)]
    assert values[:9] == [1.0] * 9
    assert values[-1] == 0.5
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert values[9] < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [*range(1_000_000, 1_000_050), *range(0, 20)])
def test_held_out_secrets_never_occur_in_what_the_agent_sees_or_derives(seed):
    # The N=50 probe found the oracle's `SELECT * FROM addresses` withheld: a held-out city was the
    # trimmed form of a padded visible one. A secret must not hide inside any visible or migrated value.
    s = spec(seed)
    visible = visible_rows(s)
    seen = [
        str(v).casefold()
        for table in (visible, expected_rows(s, visible))
        for rows in table.values()
        for row in rows
        for v in row
        if v is not None
    ]
    secrets = heldout_secrets(seed, HELDOUT_ROWS)
    assert secrets, "the held-out-leak rule needs something to watch for"
    assert not [(secret, v) for secret in secrets for v in seen if secret.casefold() in v]
    heldout_text = {v for rows in heldout_rows(s).values() for row in rows for v in row if isinstance(v, str)}
    assert set(secrets) <= heldout_text


DEV_200 = list(seeds("dev", 200))


@pytest.mark.parametrize("seed", DEV_200)
def test_held_out_secrets_never_occur_in_the_prompt_or_its_example_values(seed):
    # 20 of 200 dev seeds had a secret among the prompt's own examples ('JOSÉ@example.com', '1 Main St').
    s = spec(seed)
    text = prompt.render(s, "/app/db.sqlite", 30, 8).casefold()
    shown = [v.casefold() for v in prompt.shown_values(s)]
    secrets = heldout_secrets(seed, HELDOUT_ROWS)
    assert [x for x in secrets if x.casefold() in text or any(x.casefold() in v for v in shown)] == []


def _rehearse_examples(seed: int, tmp_path) -> str:
    """What an agent reads back when it loads the prompt's example rows, migrates them and looks."""
    s = spec(seed)
    before, _ = prompt.examples(s)
    db = tmp_path / f"{seed}.sqlite"
    db.write_bytes(dbfile.to_bytes(s.source, before))
    looks = "; ".join(f"SELECT * FROM {name}" for name in before)
    after = "; ".join(f"SELECT * FROM {t.name}" for t in s.target.tables[: len(s.target.tables) - len(s.fillers)])
    after += "".join(f"; SELECT * FROM {v.name}" for v in s.target.views)
    reply = engine.execute(str(db), f"{looks}; {BY_NAME[s.family].migration(s.params)}; {after}")
    assert reply["ok"], reply
    cells = [str(v) for entry in reply["results"] for row in entry.get("rows", []) for v in row]
    return render.execute_result(reply, 1_000_000) + "\n" + "\n".join(cells)


@pytest.mark.parametrize("seed", DEV_200)
def test_rehearsing_on_the_prompts_examples_is_never_withheld_as_a_held_out_leak(seed, tmp_path):
    # The rendered result escapes quotes inside JSON text; the raw cells are what a shell would print.
    assert match_post(_rehearse_examples(seed, tmp_path), heldout_secrets(seed, HELDOUT_ROWS)) is None


@pytest.mark.slow
def test_the_oracles_own_tool_results_are_never_withheld_as_a_held_out_leak():
    fired = {}
    for seed in DEV_200:
        episode = play(oracle, seed, heldout=20)
        secrets = heldout_secrets(seed, HELDOUT_ROWS)
        hits = [step.action.name for step in episode.steps if match_post(step.result or "", secrets)]
        if hits:
            fired[seed] = hits
    assert fired == {}
