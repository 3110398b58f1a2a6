"""The viewer's one HTML page, served (scripts and styles from /static) or exported (everything
inlined into one file), and the Content-Security-Policy each is sent with.

Agent output is hostile input, and the page is built so that it cannot become markup: the
front end (static/app.js) writes trace strings only through `textContent` and text nodes, the
data travels as JSON in `<script type="application/json">` blocks whose `<`, `>` and `&` are
\\u-escaped (no `</script>` can end a block early), and the policy allows only our own script
(by origin when served, by hash when exported), no inline handlers, no remote loads, and
Trusted Types, so even a stray `innerHTML = string` in the front end would throw, not parse.
"""

from __future__ import annotations

import base64
import hashlib
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from arena.view.load import Catalog

__all__ = ["SERVED_CSP", "export_page", "json_block", "served_page", "static_file"]

STATIC = ("app.js", "app.css")
SERVED_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'")
_SHELL = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{csp}<title>arena view</title>
{style}
</head>
<body>
<header><a href="#/" id="home">arena view</a><span id="crumbs"></span></header>
<main id="app"><p>loading…</p></main>
{data}{script}
</body>
</html>
"""


def static_file(name: str) -> bytes:
    """One of the front end's files (app.js, app.css).

    Raises:
        KeyError: not one of them.
    """
    if name not in STATIC:
        raise KeyError(name)
    return files("arena.view").joinpath("static", name).read_bytes()


def served_page() -> str:
    return _SHELL.format(csp="", style='<link rel="stylesheet" href="static/app.css">', data="",
                         script='<script src="static/app.js"></script>')


def json_block(element_id: str, value: Any) -> str:
    """`value` as a JSON data block the HTML parser cannot break out of."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{element_id}">{text}</script>\n'


def export_page(catalog: Catalog, out: Path) -> int:
    """Write the whole catalog, every transcript included, as one HTML file; returns its size in
    bytes. Transcripts stay JSON blocks until their episode is opened."""
    script, style = static_file("app.js").decode(), static_file("app.css").decode()
    csp = (f"default-src 'none'; script-src '{_sha256(script)}'; style-src '{_sha256(style)}'; img-src data:; "
           "base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'")
    blocks = [json_block("arena-index", catalog.index())]
    for run in catalog.runs:
        blocks += [json_block(f"ep-{run.index}-{i}", catalog.transcript(run.index, i)) for i in range(len(run.episodes))]
    html = _SHELL.format(csp=f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n', style=f"<style>{style}</style>",
                         data="".join(blocks), script=f"<script>{script}</script>")
    out.parent.mkdir(parents=True, exist_ok=True)
    data = html.encode()
    out.write_bytes(data)
    return len(data)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
