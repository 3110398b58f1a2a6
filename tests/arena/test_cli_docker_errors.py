"""A raw Docker SDK or transport failure reaches the user as one worded line with the fix, exit 2."""

import docker.errors
import pytest
import requests

import arena.reaper
from arena.cli import main


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            requests.exceptions.ConnectionError("('Connection aborted.', FileNotFoundError(2, 'No such file'))"),
            "not reachable",
        ),
        (docker.errors.DockerException("Error while fetching server API version: connection refused"), "not reachable"),
        (docker.errors.APIError('500 Server Error: Internal Server Error ("oci runtime error")'), "refused a call"),
        (docker.errors.NotFound("404 Client Error: No such container: vf-1234"), "arena reap --run"),
        (docker.errors.ImageNotFound("404 Client Error: No such image: arena/base:latest"), "arena images build"),
    ],
    ids=["connection-refused", "no-engine", "api-error", "container-gone", "image-missing"],
)
def test_a_docker_failure_is_worded_with_its_fix_and_exits_2(monkeypatch, capsys, error, says):
    def broken(**_kwargs):
        raise error

    monkeypatch.setattr(arena.reaper, "reap", broken)
    assert main(["reap", "--run", "r1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("arena: ") and says in err and "Fix:" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_any_other_exception_is_an_internal_error_with_its_traceback_in_a_log(monkeypatch, capsys, tmp_path):
    def broken(**_kwargs):
        raise ValueError("a bug, not the engine")

    monkeypatch.setattr(arena.reaper, "reap", broken)
    monkeypatch.setenv("ARENA_CRASH_DIR", str(tmp_path))
    assert main(["reap", "--run", "r1"]) == 70
    err = capsys.readouterr().err
    assert err.startswith("arena: internal error (ValueError: a bug, not the engine)") and len(err.splitlines()) == 1
    [log] = tmp_path.glob("arena-*.log")
    assert str(log) in err and "Traceback" in log.read_text() and "Traceback" not in err
