"""`arena view` in a real browser (Debian's headless chromium through chromedriver and Selenium):
the served pages, the exported file from file:// with networking off, and transcripts crafted
to break out of the page, which must show as text and run nothing."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena_testkit.synthetic_runs import HOSTILE, episode_line, real_variant, write_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each test drives a headless chromium

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
PAYLOAD = HOSTILE + '<svg onload="window.pwned=1"></svg>"><iframe src="javascript:window.pwned=2"></iframe>'
TIMEOUT = 20


def _need_browser() -> None:
    if CHROMIUM and DRIVER:
        return
    reason = "chromium/chromedriver not installed: run tests/support/ensure-chromium.sh (Debian's chromium, chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo-like outputs dir: an oracle run (one hostile transcript, one denial) and a staller."""
    out = tmp_path_factory.mktemp("view") / "outputs"
    oracle = [episode_line(f"task-{i}", 1.0, trace_id=f"o{i}") for i in range(4)]
    oracle[1] = episode_line("task-1", 1.0, trace_id="o1", denied=True)
    oracle[2] = episode_line("task-2", 0.5, trace_id="o2", tool_output=PAYLOAD, assistant_text=PAYLOAD, reason=PAYLOAD)
    oracle[3] = episode_line("task-3", 1.0, trace_id="o3", result_chars=5000)
    write_run(out / "demo-fl-oracle-bash", oracle, model="arena/fault-localisation/oracle")
    staller = [episode_line(f"task-{i}", 0.0, trace_id=f"s{i}", reason="no answer was submitted") for i in range(4)]
    write_run(out / "demo-fl-staller-bash", staller, model="arena/fault-localisation/staller")
    return out


@pytest.fixture(scope="module")
def driver() -> Iterator[object]:
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(flag)
    browser = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def served(runs: Path) -> Iterator[str]:
    """`arena view` on the runs (port 0: a free one); yields its URL."""
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "view", str(runs), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("arena view: http://127.0.0.1:"), line
        yield line.split()[2]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait(driver, script: str, timeout: float = TIMEOUT):  # type: ignore[no-untyped-def]
    """Poll a JS expression until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(f"return {script}")
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {script}")
        time.sleep(0.05)


def _open(driver, url: str) -> None:  # type: ignore[no-untyped-def]
    """Load `url` afresh (a change of the #fragment alone would keep the page and its state)."""
    driver.get("about:blank")
    driver.get(url)


def _untouched(driver) -> None:  # type: ignore[no-untyped-def]
    """Nothing from a transcript ran or became markup."""
    assert driver.title == "arena view"
    assert driver.execute_script("return window.pwned === undefined")
    assert driver.execute_script("return document.querySelectorAll('img, svg, iframe').length") == 0
    assert driver.execute_script("return document.scripts.length") <= 2 + driver.execute_script(
        "return document.querySelectorAll('script[type=\"application/json\"]').length")


def _hostile_episode_shows_text(driver, base: str) -> None:  # type: ignore[no-untyped-def]
    _open(driver, base + "#/run/0/ep/2")
    _wait(driver, "document.querySelector('#transcript')")
    transcript = driver.find_element("id", "transcript").text
    assert PAYLOAD in transcript  # the tool result and the assistant text, literally
    assert PAYLOAD in driver.find_element("css selector", ".grade .reason").text
    _untouched(driver)


def test_the_runs_page_lists_runs_with_their_intervals_and_clicking_opens_the_episodes(driver, served):
    _open(driver, served)
    _wait(driver, "document.querySelectorAll('#runs tbody tr').length === 2")
    table = driver.find_element("id", "runs").text
    assert "demo-fl-oracle-bash" in table and "oracle" in table and "staller" in table and "0.875 ±" in table
    driver.find_element("link text", "demo-fl-oracle-bash").click()
    _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 4")
    assert "named the root cause" in driver.find_element("id", "episodes").text


def test_the_episodes_table_sorts_and_filters(driver, served):
    _open(driver, served + "#/run/0")
    _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 4")
    driver.find_element("css selector", "th[data-key=reward]").click()
    _wait(driver, "document.querySelector('#episodes tbody tr').dataset.episode === '2'")  # 0.5 first
    box = driver.find_element("css selector", "input.filter[data-key=rewrites]")
    box.send_keys(">0")
    _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 1")
    assert driver.find_element("css selector", "#episodes tbody tr").get_attribute("data-episode") == "1"


def test_an_episode_shows_its_tool_call_result_and_the_denial_inline(driver, served):
    _open(driver, served + "#/run/0")
    _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 4")
    driver.find_element("link text", "task-1").click()
    _wait(driver, "document.querySelector('#transcript')")
    items = driver.find_elements("css selector", "#transcript > li")
    assert "grep ERROR /var/log/app.log" in items[2].text and "12 lines matched" in items[3].text
    denial = driver.find_element("css selector", "#transcript .rewrite")
    assert "DENIED" in denial.text and "net-egress" in denial.text and "it tries to reach the network" in denial.text
    assert "boot" in driver.find_element("css selector", "table.timing").text


def test_a_long_result_is_collapsed_and_expands(driver, served):
    _open(driver, served + "#/run/0/ep/3")
    _wait(driver, "document.querySelector('#transcript details.long')")
    details = driver.find_element("css selector", "#transcript details.long")
    assert details.get_attribute("open") is None
    details.find_element("tag name", "summary").click()
    assert details.get_attribute("open") is not None and "x" * 4000 in details.text


def test_a_hostile_transcript_is_shown_as_text_and_runs_nothing(driver, served):
    _hostile_episode_shows_text(driver, served)
    logs = json.dumps(driver.get_log("browser"))
    assert "pwned" not in logs.replace(json.dumps(PAYLOAD)[1:-1], "")  # no script error from the payload's code


def test_the_compare_grid_shows_the_paired_difference(driver, served):
    _open(driver, served)
    _wait(driver, "document.querySelectorAll('#runs input[type=checkbox]').length === 2")
    for box in driver.find_elements("css selector", "#runs input[type=checkbox]"):
        box.click()
    driver.find_element("id", "compare-selected").click()
    _wait(driver, "document.querySelector('#compare-grid tbody tr')")
    pairs = driver.find_element("id", "pairs").text
    assert "-0.875" in pairs and "task-0, task-1, task-2, task-3" in pairs
    assert len(driver.find_elements("css selector", "#compare-grid tbody tr")) == 4


def test_the_export_opens_from_file_with_networking_off_and_shows_the_same(driver, runs, tmp_path):
    out = tmp_path / "view.html"
    done = subprocess.run([sys.executable, "-m", "arena.cli", "view", str(runs), "--export", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    try:
        base = out.as_uri()
        driver.get(base)
        _wait(driver, "document.querySelectorAll('#runs tbody tr').length === 2")
        _hostile_episode_shows_text(driver, base)
        _open(driver, base + "#/run/0/ep/1")
        _wait(driver, "document.querySelector('#transcript .rewrite')")
        assert "net-egress" in driver.find_element("css selector", "#transcript .rewrite").text
        _open(driver, base + "#/compare/0,1")
        _wait(driver, "document.querySelector('#pairs tbody tr')")
        assert "-0.875" in driver.find_element("id", "pairs").text
    finally:
        driver.delete_network_conditions()


def _marks(driver) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The page's own clock (ms since navigation) at its performance marks."""
    return dict(driver.execute_script("return performance.getEntriesByType('mark').map(m => [m.name, m.startTime])"))


def test_a_thousand_real_episodes_open_with_every_row_and_transcripts_on_demand(driver, tmp_path):
    """Made from one real `arena demo` trace line; the timings are printed, not asserted (a shared
    machine's load decides them): README and the issue report them."""
    run = write_run(tmp_path / "big", [real_variant(i, float(i % 2), tool_output=PAYLOAD if i == 7 else None) for i in range(1000)])
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "view", str(run), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        url = (proc.stdout.readline() if ready else "").split()[2]
        _open(driver, url + "#/run/0")
        _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 1000", timeout=60)
        served = _marks(driver)
        index_bytes = driver.execute_script("return performance.getEntriesByType('resource').find(r => r.name.endsWith('index.json')).encodedBodySize")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    out = tmp_path / "big.html"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "arena.cli", "view", str(run), "--export", str(out)],
                          capture_output=True, text=True, timeout=300)
    exported = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    _open(driver, out.as_uri() + "#/run/0")
    _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 1000", timeout=60)
    from_file = _marks(driver)
    driver.find_element("partial link text", "-0007").click()
    _wait(driver, "document.querySelector('#transcript')")
    assert PAYLOAD in driver.find_element("id", "transcript").text
    _untouched(driver)
    print(f"\n1,000 real episodes ({(run / 'traces.jsonl').stat().st_size / 1e6:.0f} MB of traces): served: index {index_bytes / 1e3:.0f} kB, "
          f"first rows {served['arena:rows-first']:.0f} ms, all rows {served['arena:rows-all']:.0f} ms after navigation; "
          f"export {exported:.1f} s (with interpreter start), {out.stat().st_size / 1e6:.1f} MB, from file:// first rows "
          f"{from_file['arena:rows-first']:.0f} ms, all rows {from_file['arena:rows-all']:.0f} ms")


@pytest.mark.docker
def test_a_real_docker_rollout_is_viewable_and_its_hostile_output_stays_text(driver, images, tmp_path):
    """A bash rollout in a real box prints the payload; the viewer shows the call, its result (the
    payload as text) and the smoke rule's denial, and nothing runs."""
    from arena.server import start_in_thread
    from arena_kit.policy import Answer, RunShell
    from arena_kit.scripted import ScriptedPolicy
    from arena_testkit.rollouts import smoke_eval

    script = ScriptedPolicy([RunShell(f"cat <<'ARENA_EOF'\n{PAYLOAD}\nARENA_EOF"), RunShell("echo ARENA-FORBIDDEN > bad.txt"), Answer("DONE")])
    with start_in_thread(policies={"arena/smoke": script}) as server:
        outcome = smoke_eval(server.url, "bash", "arena/smoke", images["harness"], tmp_path)
    outcome.raise_for_failures()
    proc = subprocess.Popen([sys.executable, "-m", "arena.cli", "view", str(outcome.run_dir), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        url = (proc.stdout.readline() if ready else "").split()[2]
        _open(driver, url)
        _wait(driver, "document.querySelectorAll('#runs tbody tr').length === 1")
        driver.find_element("css selector", "a.run-link").click()
        _wait(driver, "document.querySelectorAll('#episodes tbody tr').length === 1")
        driver.find_element("css selector", "#episodes tbody a").click()
        _wait(driver, "document.querySelector('#transcript')")
        results = [li.text for li in driver.find_elements("css selector", "#transcript li.tool")]
        assert any(PAYLOAD in text for text in results), results
        assert any("DENIED by the arena smoke rule" in text for text in results), results
        assert "ARENA_EOF" in driver.find_element("css selector", "#transcript .call").text
        _untouched(driver)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_hostile_task_names_reasons_and_errors_stay_text_on_every_page(driver, tmp_path):
    rows = [episode_line(PAYLOAD, 0.0, trace_id="h1", reason=PAYLOAD, ok=False, errors=[{"type": PAYLOAD, "message": PAYLOAD}]),
            episode_line("plain", 1.0, trace_id="h2")]
    rows[0]["errors"] = [{"type": "X", "message": PAYLOAD}]
    a = write_run(tmp_path / "a", rows, model=PAYLOAD)
    b = write_run(tmp_path / "b", [episode_line(PAYLOAD, 1.0, trace_id="h3"), episode_line("plain", 1.0, trace_id="h4")])
    out = tmp_path / "hostile.html"
    done = subprocess.run([sys.executable, "-m", "arena.cli", "view", str(a), str(b), "--export", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for fragment, ready in (("#/", "#runs tbody tr"), ("#/run/0", "#episodes tbody tr"), ("#/run/0/ep/0", "#transcript"),
                            ("#/compare/0,1", "#compare-grid tbody tr")):
        _open(driver, out.as_uri() + fragment)
        _wait(driver, f"document.querySelector('{ready}')")
        assert PAYLOAD in driver.find_element("tag name", "main").text, fragment
        _untouched(driver)


def test_the_policy_itself_refuses_html_from_strings_and_inline_handlers(driver, served):
    """The second line of defence, should the front end ever slip: under Trusted Types both an
    `innerHTML = string` and setting an inline handler from a string throw."""
    _open(driver, served)
    _wait(driver, "document.querySelector('#runs tbody tr')")
    attempts = {
        "innerHTML": "document.getElementById('app').innerHTML = '<img src=x onerror=\"window.pwned=3\">'",
        "handler": "document.createElement('img').setAttribute('onerror', 'window.pwned = 3')",
        "script": "document.createElement('script').textContent = 'window.pwned = 4'",
    }
    for name, code in attempts.items():
        outcome = driver.execute_script(f"try {{ {code}; return 'allowed'; }} catch (e) {{ return e.name; }}")
        assert outcome == "TypeError", name
    _untouched(driver)
