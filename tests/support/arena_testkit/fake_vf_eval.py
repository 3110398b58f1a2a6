"""A fake `vf-eval` on PATH for tests of Arena's eval supervision (the real one needs docker; the
docker tests run it): it writes its pid, then either writes one trace (reward 0.5) and exits, or,
for the model "sleep", sleeps until terminated."""

import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

FAKE_VF_EVAL = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, time, tomllib
    config = tomllib.loads(open(sys.argv[2]).read())
    run_dir = os.path.join(config["output_dir"], config["run"]["name"])
    os.makedirs(run_dir, exist_ok=True)
    open(os.path.join(config["output_dir"], config["run"]["name"] + ".pid"), "w").write(str(os.getpid()))
    if config["model"] == "sleep":
        time.sleep(120)
    trace = {{"ok": True, "rewards": {{"r": {{"score": 0.5}}}}, "calls": [{{}}, {{}}], "agent": {{"runtime": {{"id": "box-" + config["run"]["name"]}}}}}}
    with open(os.path.join(run_dir, "traces.jsonl"), "w") as f:
        f.write(json.dumps({{"ok": True, "task": {{"data": {{"name": config["run"]["name"]}}}}, "traces": [trace]}}) + "\\n")
    print("fake vf-eval done")
    """
)


def ctrl_c_deliverable() -> None:
    """`preexec_fn` for a driver a test sends Ctrl-C (SIGINT): a shell runs background jobs (CI under
    `nohup … &`) with SIGINT ignored, which children inherit and Python then leaves ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def put_vf_eval_on_path(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install `source` (a script template with `{python}`) as `vf-eval` first on PATH; its directory.

    A fake eval starts no box, so the leftover sweep after it (in this process) is switched off: it would only
    find the live boxes of a docker test on another worker whose evals share its run name, and remove them."""
    from arena import evalrun

    monkeypatch.setattr(evalrun, "_reap_leftovers", lambda request, launched: ())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "vf-eval"
    script.write_text(source.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


@pytest.fixture
def fake_vf_eval(tmp_path, monkeypatch):
    return put_vf_eval_on_path(FAKE_VF_EVAL, tmp_path, monkeypatch)
