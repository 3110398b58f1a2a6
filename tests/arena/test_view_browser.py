"""`arena view` in a real browser (Debian's headless chromium through chromedriver and Selenium):
live runs, transcripts as a reader wants them, finding things (search, keys, URL state, sorting,
grouping), compare against a chosen baseline, the exported file from file:// with networking off,
5,000 episodes, and transcripts crafted to break out of the page, which must show as text and run
nothing."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from arena_kit.gate.stats import holm
from arena_testkit.synthetic_runs import DEFAULT_IMAGE, HOSTILE, episode_line, real_variant, write_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # each test drives a headless chromium

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
PAYLOAD = HOSTILE + '<svg onload="window.pwned=1"></svg>"><iframe src="javascript:window.pwned=2"></iframe>'
SQL = "SELECT name,\n       count(*) AS n\nFROM users\nWHERE note = '<script>x</script>'\nGROUP BY name;"
TIMEOUT = 20
ORACLE, STALLER, ROLLOUTS = "demo-fl-oracle-bash", "demo-fl-staller-bash", "rollouts"


def _need_browser() -> None:
    if CHROMIUM and DRIVER:
        return
    reason = (
        "chromium/chromedriver not installed: run tests/support/ensure-chromium.sh (Debian's chromium, chromium-driver)"
    )
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def sql_episode(task: str, trace_id: str) -> dict[str, Any]:
    """An episode whose first call runs SQL (a multi-line string argument) and whose result is JSON."""
    row = episode_line(
        task, 1.0, trace_id=trace_id, tool_output=json.dumps({"rows": [{"name": "ada", "n": 3}], "elapsed_ms": 4})
    )
    call = row["traces"][0]["nodes"][2]["message"]["tool_calls"][0]
    call.update(name="sqlite_query", arguments=json.dumps({"sql": SQL}))
    row["traces"][0]["calls"][0]["usage"] = {"prompt_tokens": 1200, "completion_tokens": 30, "cached_input_tokens": 200}
    return row


def make_runs(out: Path) -> Path:
    """A demo-like outputs dir: an oracle run (a hostile transcript, a denial, SQL, a long result,
    12 tasks named dev#0…dev#11), a staller, and a run with three rollouts per task."""
    oracle = [episode_line(f"dev#{i}", 1.0, trace_id=f"o{i}") for i in range(12)]
    oracle[1] = episode_line("dev#1", 1.0, trace_id="o1", denied=True)
    oracle[2] = episode_line("dev#2", 0.5, trace_id="o2", tool_output=PAYLOAD, assistant_text=PAYLOAD, reason=PAYLOAD)
    oracle[3] = episode_line("dev#3", 1.0, trace_id="o3", result_chars=5000)
    oracle[4] = sql_episode("dev#4", "o4")
    oracle[10] = episode_line("dev#10", 0.0, trace_id="o10", reason="the wrong service")
    run = write_run(out / ORACLE, oracle, model="arena/fault-localisation/oracle")
    (run / "vf-eval.log").write_text("vf-eval: 12 episodes\n")
    (run / "logs" / "attempt_1").mkdir(parents=True)
    (run / "logs" / "attempt_1" / "eval.log").write_text("attempt 1\n")
    (run / "arena-versions.json").write_text(
        json.dumps({"arena-evals": "0.1.0", "verifiers": "0.4.0", "image": "arena/fault-localisation:latest"})
    )
    (out / "prices.toml").write_text('[models."arena/fault-localisation/oracle"]\ninput = 2.0\noutput = 10.0\n')
    staller = [episode_line(f"dev#{i}", 0.0, trace_id=f"s{i}", reason="no answer was submitted") for i in range(12)]
    write_run(out / STALLER, staller, model="arena/fault-localisation/staller")
    rollouts = [episode_line(f"dev#{t}", float(k <= t), trace_id=f"r{t}-{k}") for t in range(3) for k in range(3)]
    write_run(out / ROLLOUTS, rollouts, model="arena/fault-localisation/impatient")
    for run_dir in out.iterdir():
        if run_dir.is_dir():
            (run_dir / "vf-eval.log").touch()  # ended: not shown as running
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("view") / "outputs")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=str(DRIVER)), options=options)
    try:
        yield browser
    finally:
        browser.quit()


def serve(path: Path, timeout: float = 60) -> tuple[subprocess.Popen[str], str]:
    """`arena view PATH --port 0` and its URL, read by a thread (a select on the buffered pipe misses lines it already read)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "view", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()

    def pump(stdout: IO[str]) -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, args=(proc.stdout,), daemon=True).start()
    deadline = time.monotonic() + timeout
    printed: list[str] = []
    try:
        while not (
            printed and printed[-1].startswith("arena view: http://127.0.0.1:")
        ):  # past the lines naming runs it cannot read
            try:
                printed.append(lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(
                    f"arena view printed no URL in {timeout:.0f} s (exit {proc.poll()}):\n{''.join(printed)}"
                ) from None
    except BaseException:
        proc.kill()
        proc.wait(timeout=10)
        raise
    return proc, printed[-1].split()[2]


@pytest.fixture(scope="module")
def served(runs: Path) -> Iterator[str]:
    proc, url = serve(runs)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait(driver: Any, script: str, timeout: float = TIMEOUT) -> Any:
    """Poll a JS expression until it is truthy; returns its value. An expression that throws (the page is still
    loading: `document.querySelector(...)` is null) is not ready yet; at the deadline its error is reported."""
    from selenium.common.exceptions import JavascriptException

    deadline = time.monotonic() + timeout
    while True:
        try:
            value, error = driver.execute_script(f"return {script}"), None
        except JavascriptException as thrown:
            value, error = None, thrown.msg
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {script}" + (f" (it threw: {error})" if error else ""))
        time.sleep(0.05)


def open_(driver: Any, url: str) -> None:
    """Load `url` afresh (a change of the #fragment alone would keep the page and its state)."""
    driver.get("about:blank")
    driver.get(url)


def keys(driver: Any, text: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(text).perform()


def untouched(driver: Any) -> None:
    """Nothing from a transcript ran or became markup."""
    assert driver.title == "arena view"
    assert driver.execute_script("return window.pwned === undefined")
    assert driver.execute_script("return document.querySelectorAll('img, svg, iframe').length") == 0
    inline = driver.execute_script(
        "return [...document.scripts].filter(s => !s.type || s.type.includes('javascript')).length"
    )
    assert inline == 6  # the vendored highlighter and our five scripts


def fragment(driver: Any) -> str:
    return driver.execute_script("return decodeURIComponent(location.hash)")


def param(driver: Any, name: str) -> str | None:
    """A parameter of the page's state in the URL's #fragment."""
    return driver.execute_script(f"return new URLSearchParams(location.hash.split('?')[1] || '').get({name!r})")


# ---- 1. live ---------------------------------------------------------------------------------------


def test_a_running_eval_shows_new_episodes_without_a_reload_and_a_new_run_appears(driver, tmp_path):
    out = tmp_path / "outputs"
    run = write_run(out / "live", [episode_line("dev#0", 1.0, trace_id="l0")])
    proc, url = serve(out)
    try:
        open_(driver, url + "#/run/live")
        wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 1")
        assert driver.find_element("id", "run-status").text == "running"
        wait(driver, "document.getElementById('live').textContent.includes('live')")
        latencies = []
        for i in range(1, 4):
            with (run / "traces.jsonl").open("a") as f:
                f.write(json.dumps(episode_line(f"dev#{i}", 0.0, trace_id=f"l{i}")) + "\n")
            written = time.monotonic()
            wait(driver, f"document.querySelectorAll('#episodes tbody tr.ep').length === {i + 1}", timeout=10)
            latencies.append(time.monotonic() - written)
        assert "mean 0.250" in driver.find_element("id", "run-mean").text
        write_run(out / "second", [episode_line("dev#0", 1.0, trace_id="n0")])
        driver.find_element("id", "home").click()
        wait(driver, "document.querySelector('#runs tr[data-run=second]')", timeout=10)
        print(f"\nlive: each appended episode showed {', '.join(f'{s:.2f}' for s in latencies)} s after it was written")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ---- 2. transcripts --------------------------------------------------------------------------------


def test_sql_and_shell_arguments_are_unescaped_and_highlighted_and_json_results_are_trees(driver, served):
    open_(driver, served + f"#/run/{ORACLE}/ep/4")
    wait(driver, "document.querySelector('#transcript')")
    arg = driver.find_element("css selector", "#transcript pre.lang-sql")
    assert arg.text == SQL  # real newlines and quotes, not \n and \"
    keywords = [k.text for k in arg.find_elements("css selector", ".tok-keyword")]
    assert {"SELECT", "FROM", "WHERE", "GROUP", "BY"} <= set(keywords)
    result = driver.find_element("css selector", "#transcript li.tool .json-result")
    assert '"elapsed_ms": 4' in result.text and "ada" in result.text
    tree = result.find_element("css selector", "details.jtree")
    assert tree.get_attribute("open") is not None
    tree.find_element("tag name", "summary").click()
    assert tree.get_attribute("open") is None  # collapsible
    open_(driver, served + f"#/run/{ORACLE}/ep/1")
    wait(driver, "document.querySelector('#transcript pre.lang-bash')")
    shell = driver.find_element("css selector", "#transcript pre.lang-bash")
    assert shell.text == "grep ERROR /var/log/app.log" and shell.find_elements("css selector", ".tok")


def test_an_episode_shows_turn_times_tokens_cost_a_timeline_and_the_denial_inline(driver, served):
    open_(driver, served + f"#/run/{ORACLE}/ep/4")
    wait(driver, "document.querySelector('#transcript')")
    first = driver.find_elements("css selector", "#transcript li.assistant")[0]
    meta = first.find_element("css selector", ".meta").text
    assert "+1.00 s" in meta and "model 0.50 s" in meta and "1200 in · 30 out · 200 cached" in meta
    assert "tool 1.00 s" in driver.find_elements("css selector", "#transcript li.tool")[0].text
    assert "tokens 1200 in / 30 out · cost $0.0027" in driver.find_element("id", "episode-tokens").text
    lanes = driver.find_elements("css selector", "#timeline .lane-row")
    assert [lane.find_element("css selector", ".lane-name").text for lane in lanes] == [
        "phase",
        "model",
        "tool",
        "gate",
    ]
    assert len(lanes[1].find_elements("css selector", ".bar")) == 2 and lanes[2].find_elements("css selector", ".bar")
    open_(driver, served + f"#/run/{ORACLE}/ep/1")
    wait(driver, "document.querySelector('#transcript .rewrite')")
    denial = driver.find_element("css selector", "#transcript .rewrite")
    assert "DENIED" in denial.text and "net-egress" in denial.text and "it tries to reach the network" in denial.text
    assert driver.find_elements("css selector", "#timeline .bar.gate")


def test_the_run_page_shows_totals_config_versions_and_logs_and_the_episode_its_raw_line(driver, served):
    open_(driver, served + f"#/run/{ORACLE}")
    wait(driver, "document.querySelector('#run-details')")
    assert (
        "tokens 1200 in / 30 out" in driver.find_element("id", "run-header").text
        and "cost $0.0027" in driver.find_element("id", "run-header").text
    )
    driver.find_element("css selector", "#run-details > summary").click()
    details = driver.find_element("id", "run-details").text
    assert "fault-localisation" in details and '"arena-evals": "0.1.0"' in details
    key_facts = driver.find_element("css selector", "#run-details > .jtree").text
    assert "arena/fault-localisation:latest" in key_facts and DEFAULT_IMAGE not in key_facts  # the tasks' image
    links = driver.find_elements("css selector", "#logs a")
    assert [a.text for a in links] == ["vf-eval.log", "logs/attempt_1/eval.log"]
    href = links[1].get_attribute("href")
    driver.get(href)
    assert driver.find_element("tag name", "body").text == "attempt 1"
    open_(driver, served + f"#/run/{ORACLE}/ep/0")
    wait(driver, "document.querySelector('#raw')")
    driver.find_element("css selector", "#raw > summary").click()
    wait(driver, "document.querySelector('#raw details.jtree')")
    assert '"ep-o0"' in driver.find_element("id", "raw").text


def test_a_long_result_is_collapsed_and_expands(driver, served):
    open_(driver, served + f"#/run/{ORACLE}/ep/3")
    wait(driver, "document.querySelector('#transcript button.more')")
    assert "x" * 4000 not in driver.find_element("id", "transcript").text
    driver.find_element("css selector", "#transcript button.more").click()
    assert "x" * 4000 in driver.find_element("id", "transcript").text


# ---- 3. finding things -----------------------------------------------------------------------------


def test_the_runs_table_sorts_with_dates_and_the_sort_lives_in_the_url(driver, served):
    open_(driver, served)
    wait(driver, "document.querySelectorAll('#runs tbody tr').length === 3")
    assert [r.get_attribute("data-run") for r in driver.find_elements("css selector", "#runs tbody tr")] == [
        ORACLE,
        STALLER,
        ROLLOUTS,
    ]
    assert "2023-11-14" in driver.find_element("id", "runs").text
    driver.find_element("css selector", "th[data-key=mean] a").click()
    wait(driver, "document.querySelector('#runs tbody tr').dataset.run === 'demo-fl-staller-bash'")
    driver.find_element("css selector", "th[data-key=mean] a").click()
    wait(driver, "document.querySelector('#runs tbody tr').dataset.run === 'demo-fl-oracle-bash'")
    assert (param(driver, "sort"), param(driver, "desc")) == ("mean", "1")
    driver.refresh()
    wait(driver, "document.querySelector('#runs tbody tr').dataset.run === 'demo-fl-oracle-bash'")
    name = driver.find_element("css selector", f"#runs tr[data-run={ORACLE}] td[title]")
    assert name.get_attribute("title").endswith(ORACLE)  # the full path on hover


def test_filters_sort_search_and_selection_live_in_the_url_and_keys_move_and_open(driver, served):
    open_(driver, served + f"#/run/{ORACLE}")
    wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 12")
    driver.find_element("css selector", "th[data-key=score]").click()
    wait(driver, "document.querySelector('#episodes tbody tr.ep').dataset.episode === '10'")  # 0 first
    driver.find_element("css selector", "input.filter[data-key=score]").send_keys("<1")
    wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 2")
    driver.execute_script("document.activeElement.blur()")
    keys(driver, "jj")
    wait(
        driver,
        "document.querySelector('#episodes tr.sel') && document.querySelector('#episodes tr.sel').dataset.episode === '2'",
    )
    assert (param(driver, "sort"), param(driver, "f.score"), param(driver, "sel")) == ("score", "<1", "2")
    driver.refresh()  # the same list, the same selection
    wait(
        driver,
        "document.querySelectorAll('#episodes tbody tr.ep').length === 2 && document.querySelector('#episodes tr.sel')",
    )
    assert driver.find_element("css selector", "#episodes tr.sel").get_attribute("data-episode") == "2"
    keys(driver, "\ue007")  # Enter
    wait(driver, "document.querySelector('#task-name') && document.querySelector('#task-name').textContent === 'dev#2'")
    assert driver.find_element("id", "prev").text.startswith("← previous") and not driver.find_elements("id", "next")
    keys(driver, "p")  # the previous in the list as filtered and sorted: dev#10, not dev#1
    wait(
        driver, "document.querySelector('#task-name') && document.querySelector('#task-name').textContent === 'dev#10'"
    )
    keys(driver, "u")
    wait(
        driver,
        "document.querySelector('#episodes tr.sel') && document.querySelector('#episodes tr.sel').dataset.episode === '10'",
    )
    keys(driver, "/")
    assert driver.execute_script("return document.activeElement.id") == "run-search"


def test_full_text_search_across_a_run_and_within_an_episode(driver, served):
    open_(driver, served + f"#/run/{ORACLE}")
    wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 12")
    box = driver.find_element("id", "run-search")
    box.send_keys("count(*) AS n\ue007")  # an SQL argument, as the model wrote it
    wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 1")
    assert driver.find_element("css selector", "#episodes tbody tr.ep").get_attribute("data-episode") == "4"
    assert param(driver, "q") == "count(*) AS n"
    driver.find_element("css selector", "#episodes tbody tr.ep a").click()
    wait(driver, "document.querySelector('#episode-search')")
    driver.find_element("id", "episode-search").send_keys("ada")
    wait(driver, "document.querySelectorAll('#transcript mark').length > 0")
    assert "1 of 1 matching" in driver.find_element("id", "episode-found").text
    assert driver.find_element("css selector", "#transcript li.current").get_attribute("data-kind") == "tool"


def test_rollouts_of_one_task_are_grouped_with_pass_at_k(driver, served):
    open_(driver, served + f"#/run/{ROLLOUTS}?group=1")
    wait(driver, "document.querySelectorAll('#episodes tbody tr.group').length === 3")
    rows = driver.find_elements("css selector", "#episodes tbody tr.group")
    assert [r.get_attribute("data-task") for r in rows] == ["dev#0", "dev#1", "dev#2"]
    assert "1 of 3" in rows[0].text and len(rows[0].find_elements("css selector", "a.roll")) == 3
    table = driver.find_element("id", "pass-at-k").text
    assert "pass@k" in table and "pass^k" in table
    rows[1].find_elements("css selector", "a.roll")[1].click()
    wait(driver, "document.querySelector('#task-name') && document.querySelector('#task-name').textContent === 'dev#1'")
    assert fragment(driver).startswith(f"#/run/{ROLLOUTS}/ep/4")


# ---- 4. compare ------------------------------------------------------------------------------------


def test_compare_against_a_chosen_baseline_with_the_paired_test_and_per_rollout_links(driver, served):
    open_(driver, served)
    wait(driver, "document.querySelectorAll('#runs input[type=checkbox]').length === 3")
    driver.find_element("css selector", f"#runs input[data-run={STALLER}]").click()  # ticked first: the baseline
    driver.find_element("css selector", f"#runs input[data-run={ORACLE}]").click()
    driver.find_element("id", "compare-selected").click()
    wait(driver, "document.querySelector('#pairs tbody tr')")
    pair = driver.find_element("css selector", "#pairs tbody tr").text
    assert "+0.875" in pair and "11 / 0 / 1" in pair  # B (oracle) better on 11, worse on 0, tied on 1
    tasks = [r.get_attribute("data-task") for r in driver.find_elements("css selector", "#compare-grid tbody tr")]
    assert tasks == [f"dev#{i}" for i in range(12)]  # dev#2 before dev#10
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", "baseline")).select_by_visible_text(ORACLE)
    wait(
        driver,
        "document.querySelector('#pairs tbody tr') && document.querySelector('#pairs tbody tr').textContent.includes('-0.875')",
    )
    assert (
        "0 / 11 / 1" in driver.find_element("css selector", "#pairs tbody tr").text and param(driver, "base") == ORACLE
    )
    link = driver.find_element("css selector", "#compare-grid tr[data-task='dev#4'] td:nth-child(2) a.roll")
    link.click()
    wait(driver, "document.querySelector('#task-name') && document.querySelector('#task-name').textContent === 'dev#4'")
    assert fragment(driver).startswith(f"#/run/{ORACLE}/ep/4")


def test_several_runs_are_compared_with_holms_adjustment(driver, served):
    open_(driver, served + f"#/compare?runs={STALLER},{ORACLE},{ROLLOUTS}")
    wait(driver, "document.querySelectorAll('#pairs tbody tr').length === 2")
    rows = driver.find_elements("css selector", "#pairs tbody tr")
    raw = [float(r.find_element("css selector", ".p").text) for r in rows]
    adjusted = [float(r.find_element("css selector", ".holm").text) for r in rows]
    assert adjusted == pytest.approx(holm(raw), abs=1e-3)
    assert len(driver.find_elements("css selector", "#compare-grid tr[data-task='dev#0'] td:nth-child(4) a.roll")) == 3


# ---- 5. the export ---------------------------------------------------------------------------------


def test_the_export_opens_from_file_with_networking_off_and_shows_the_same(driver, runs, tmp_path):
    out = tmp_path / "view.html"
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "view", str(runs), "--export", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    try:
        base = out.as_uri()
        open_(driver, base)
        wait(driver, "document.querySelectorAll('#runs tbody tr').length === 3")
        open_(driver, base + f"#/run/{ORACLE}/ep/2")
        wait(driver, "document.querySelector('#transcript')")
        assert (
            PAYLOAD in driver.find_element("id", "transcript").text
            and PAYLOAD in driver.find_element("css selector", ".grade .reason").text
        )
        untouched(driver)
        open_(driver, base + f"#/run/{ORACLE}/ep/4")
        wait(driver, "document.querySelector('#transcript pre.lang-sql')")
        assert driver.find_element("css selector", "#transcript pre.lang-sql").text == SQL
        open_(driver, base + f"#/run/{ORACLE}?q=elapsed_ms")
        wait(driver, "document.querySelectorAll('#episodes tbody tr.ep').length === 1")
        open_(driver, base + f"#/compare?runs={STALLER},{ORACLE}")
        wait(driver, "document.querySelector('#pairs tbody tr')")
        assert "+0.875" in driver.find_element("id", "pairs").text
    finally:
        driver.delete_network_conditions()


# ---- 5,000 episodes --------------------------------------------------------------------------------


def test_five_thousand_episodes_show_their_first_rows_and_sort_at_once(driver, tmp_path):
    """Made from one real `arena demo` trace line. The timings are printed, not asserted (a shared
    machine's load decides them); docs/viewing.md reports them."""
    run = write_run(
        tmp_path / "big",
        [real_variant(i, float(i % 3 == 0), tool_output=PAYLOAD if i == 7 else None) for i in range(5000)],
    )
    proc, url = serve(run, timeout=180)
    try:
        open_(driver, url + "#/run/big")
        wait(
            driver,
            "document.querySelector('#shown') && document.querySelector('#shown').textContent.includes('5000 of 5000')",
            timeout=60,
        )
        first = driver.execute_script("return performance.getEntriesByName('arena:rows-first')[0].startTime")
        rendered = driver.execute_script("return document.querySelectorAll('#episodes tbody tr.ep').length")
        assert rendered < 200  # a virtual list: only the rows in view exist
        sorts = []
        for _ in range(3):
            before = driver.execute_script("return performance.getEntriesByName('arena:redraw').length")
            started = time.monotonic()
            driver.find_element("css selector", "th[data-key=score]").click()
            wait(driver, f"performance.getEntriesByName('arena:redraw').length > {before}")
            sorts.append(
                (
                    driver.execute_script("return performance.getEntriesByName('arena:redraw').at(-1).duration"),
                    time.monotonic() - started,
                )
            )
        assert (
            driver.find_element("css selector", "#episodes tbody tr.ep").get_attribute("data-episode") == "1"
        )  # ascending: the zeros, by index
        driver.execute_script("const s = document.getElementById('episodes-scroll'); s.scrollTop = s.scrollHeight")
        wait(driver, "[...document.querySelectorAll('#episodes tbody tr.ep')].some(r => r.dataset.episode === '4998')")
        open_(driver, url + "#/run/big/ep/7")
        wait(driver, "document.querySelector('#transcript')")
        assert PAYLOAD in driver.find_element("id", "transcript").text
        untouched(driver)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(
        f"\n5,000 real episodes ({(run / 'traces.jsonl').stat().st_size / 1e6:.0f} MB of traces): first rows {first:.0f} ms after navigation; "
        f"sort by score {', '.join(f'{page:.0f} ms in the page ({wall:.2f} s click to rows, through WebDriver)' for page, wall in sorts)}"
    )


# ---- hostile input ---------------------------------------------------------------------------------


def test_a_hostile_transcript_is_shown_as_text_and_runs_nothing(driver, served):
    open_(driver, served + f"#/run/{ORACLE}/ep/2")
    wait(driver, "document.querySelector('#transcript')")
    assert PAYLOAD in driver.find_element("id", "transcript").text
    assert PAYLOAD in driver.find_element("css selector", ".grade .reason").text
    untouched(driver)
    logs = json.dumps(driver.get_log("browser"))
    assert "pwned" not in logs.replace(json.dumps(PAYLOAD)[1:-1], "")  # no script error from the payload's code


def test_hostile_names_huge_results_and_invalid_utf8_stay_text_on_every_page(driver, tmp_path):
    rows = [
        episode_line(
            PAYLOAD, 0.0, trace_id="h1", reason=PAYLOAD, ok=False, errors=[{"type": PAYLOAD, "message": PAYLOAD}]
        ),
        episode_line("plain", 1.0, trace_id="h2", tool_output=json.dumps({"big": "y" * 10_000_000, "html": PAYLOAD})),
    ]
    rows[0]["errors"] = [{"type": "X", "message": PAYLOAD}]
    a = write_run(tmp_path / "a", rows, model=PAYLOAD)
    raw = (a / "traces.jsonl").read_bytes().replace(b"I will query the log.", b"bad \xff\xfe bytes", 1)
    (a / "traces.jsonl").write_bytes(raw)
    b = write_run(
        tmp_path / "b", [episode_line(PAYLOAD, 1.0, trace_id="h3"), episode_line("plain", 1.0, trace_id="h4")]
    )
    out = tmp_path / "hostile.html"
    done = subprocess.run(
        [sys.executable, "-m", "arena.cli", "view", str(a), str(b), "--export", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for where, ready in (
        ("#/", "#runs tbody tr"),
        ("#/run/a", "#episodes tbody tr.ep"),
        ("#/run/a/ep/0", "#transcript"),
        ("#/run/a/ep/1", "#transcript .json-result"),
        ("#/compare?runs=a,b", "#compare-grid tbody tr"),
    ):
        open_(driver, out.as_uri() + where)
        wait(driver, f"document.querySelector('{ready}')", timeout=60)
        text = driver.find_element("tag name", "main").text
        assert PAYLOAD in text or where == "#/run/a/ep/1", where
        untouched(driver)
    open_(driver, out.as_uri() + "#/run/a/ep/0")
    wait(driver, "document.querySelector('#transcript')")
    assert "bad \ufffd\ufffd bytes" in driver.find_element("id", "transcript").text


def test_the_policy_itself_refuses_html_from_strings_and_inline_handlers(driver, served):
    """The second line of defence, should the front end ever slip: under Trusted Types both an
    `innerHTML = string` and setting an inline handler from a string throw."""
    open_(driver, served)
    wait(driver, "document.querySelector('#runs tbody tr')")
    attempts = {
        "innerHTML": "document.getElementById('app').innerHTML = '<img src=x onerror=\"window.pwned=3\">'",
        "handler": "document.createElement('img').setAttribute('onerror', 'window.pwned = 3')",
        "script": "document.createElement('script').textContent = 'window.pwned = 4'",
    }
    for name, code in attempts.items():
        outcome = driver.execute_script(f"try {{ {code}; return 'allowed'; }} catch (e) {{ return e.name; }}")
        assert outcome == "TypeError", name
    untouched(driver)


def test_a_folder_of_malformed_runs_opens_every_page_without_a_script_error(driver, tmp_path):
    from arena_testkit.malformed_runs import GOOD, make_malformed

    folder = make_malformed(tmp_path / "malformed")
    proc, url = serve(folder)
    try:
        driver.get_log("browser")  # drop what earlier tests left
        open_(driver, url)
        wait(driver, "document.querySelectorAll('#runs tbody tr').length === 12")
        problems = [p.get_attribute("data-run") for p in driver.find_elements("css selector", "p.problem")]
        assert sorted(problems) == ["a-device", "garbled-middle", "nested", "not-episodes", "traces-a-folder"]
        assert "empty: no episodes" in driver.find_element("tag name", "main").text
        for rid in GOOD:
            open_(driver, f"{url}#/run/{rid}")
            wait(driver, "document.querySelector('#episodes tbody tr.ep')")
            open_(driver, f"{url}#/run/{rid}/ep/0")
            wait(driver, "document.querySelector('#transcript') || document.querySelector('#problem')")
            assert not driver.find_elements("id", "problem"), rid
            untouched(driver)
        open_(driver, f"{url}#/run/garbled-middle")
        wait(driver, "document.querySelector('#run-header .problem')")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]]
        assert not errors, errors
    finally:
        proc.terminate()
        proc.wait(timeout=10)
