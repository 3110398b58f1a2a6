"""Take the screenshots docs/viewing.md shows (docs/img/view/*.png), from real runs, in Debian's
headless chromium: `python tests/arena/view_screenshots.py OUTPUTS_DIR` after `arena demo
--output-dir OUTPUTS_DIR`. Not a test: it writes into the docs."""

from __future__ import annotations

import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

DOCS = Path(__file__).resolve().parents[2] / "docs" / "img" / "view"
WINDOW = (1280, 760)


def _settle(driver: webdriver.Chrome, ready: str) -> None:
    deadline = time.monotonic() + 30
    while not driver.execute_script(f"return !!document.querySelector({ready!r})"):
        if time.monotonic() > deadline:
            raise SystemExit(f"the page never showed {ready}")
        time.sleep(0.1)
    time.sleep(0.3)


def _save(driver: webdriver.Chrome, name: str) -> None:
    path = DOCS / f"{name}.png"
    driver.save_screenshot(str(path))
    Image.open(path).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"{path}: {path.stat().st_size // 1024} kB")


def main(outputs: Path) -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "arena.cli", "view", str(outputs), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    url = (proc.stdout.readline() if ready else "").split()[2]
    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(shutil.which("chromedriver"))), options=options)
    try:
        driver.get(url)
        _settle(driver, "#runs tbody tr")
        runs = driver.execute_script("return [...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.run)")
        oracle = next(r for r in runs if "fault-localisation-oracle" in r)
        staller = next(r for r in runs if "fault-localisation-staller" in r)
        _save(driver, "runs")
        driver.get(f"{url}#/run/{oracle}?sort=score&sel=1")
        _settle(driver, "#episodes tbody tr.ep")
        driver.find_element("id", "run-search").send_keys("onset\ue007")
        _settle(driver, "#episodes tbody tr.ep")
        _save(driver, "episodes")
        driver.get(f"{url}#/run/{oracle}/ep/1")
        _settle(driver, "#transcript")
        _save(driver, "episode")
        driver.execute_script("document.querySelector('#transcript li:nth-child(3)').scrollIntoView()")
        driver.execute_script("window.scrollBy(0, -8)")
        _save(driver, "transcript")
        driver.get(f"{url}#/compare?runs={staller},{oracle}&base={staller}")
        _settle(driver, "#pairs tbody tr")
        _save(driver, "compare")
    finally:
        driver.quit()
        proc.terminate()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
