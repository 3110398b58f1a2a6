"""The viewer's one HTML page, served (scripts and styles from /static) or exported (everything
inlined into one file), and the Content-Security-Policy each is sent with.

Agent output is hostile input, and the page is built so that it cannot become markup: the
front end (static/*.js) writes trace strings only through `textContent` and text nodes, the
data travels as JSON in `<script type="application/json">` blocks whose `<`, `>` and `&` are
\\u-escaped (no `</script>` can end a block early) or as base64, and the policy allows only our own
scripts (by origin when served, by hash when exported), no inline handlers, no remote loads, and
Trusted Types, so even a stray `innerHTML = string` in the front end would throw, not parse.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from importlib.resources import files
from typing import Any

__all__ = [
    "SCRIPTS",
    "SERVED_CSP",
    "STYLES",
    "content_type",
    "export_shell",
    "json_block",
    "served_page",
    "static_file",
    "to_json",
]

SCRIPTS = ("vendor/prism.js", "core.js", "runs.js", "episodes.js", "episode.js", "compare.js")
"""The front end in load order: the vendored highlighter, then ours (core first; it starts the page)."""
STYLES = ("app.css",)
TYPES = {".js": "text/javascript", ".css": "text/css", ".txt": "text/plain; charset=utf-8"}
STATIC = (*SCRIPTS, *STYLES, "vendor/PRISM-LICENSE.txt")
SERVED_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
)
_SHELL = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{csp}<title>arena view</title>
{style}
</head>
<body>
<header><a href="#/" id="home">arena view</a><span id="crumbs"></span><span id="live"></span></header>
<main id="app"><p>loading…</p></main>
"""


def static_file(name: str) -> bytes:
    """One of the front end's files.

    Raises:
        KeyError: not one of them.
    """
    if name not in STATIC:
        raise KeyError(name)
    return files("arena.view").joinpath("static", *name.split("/")).read_bytes()


def content_type(name: str) -> str:
    return TYPES["." + name.rsplit(".", 1)[-1]]


def served_page() -> str:
    styles = "".join(f'<link rel="stylesheet" href="static/{name}">' for name in STYLES)
    scripts = "".join(f'<script src="static/{name}"{_attrs(name)}></script>\n' for name in SCRIPTS)
    return _SHELL.format(csp="", style=styles) + scripts + "</body>\n</html>\n"


def export_shell() -> tuple[str, str]:
    """The exported page's head (with its policy pinning each inline script and style by hash) and
    its tail (the scripts); the data blocks go between."""
    scripts = [static_file(name).decode() for name in SCRIPTS]
    styles = [static_file(name).decode() for name in STYLES]
    csp = (
        f"default-src 'none'; script-src {' '.join(_sha256(s) for s in scripts)}; "
        f"style-src {' '.join(_sha256(s) for s in styles)}; img-src data:; "
        "base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'"
    )
    head = _SHELL.format(
        csp=f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n',
        style="".join(f"<style>{s}</style>" for s in styles),
    )
    tail = (
        "".join(f"<script{_attrs(name)}>{text}</script>\n" for name, text in zip(SCRIPTS, scripts))
        + "</body>\n</html>\n"
    )
    return head, tail


def to_json(value: Any) -> str:
    """`value` as JSON every browser parses: NaN and ±Infinity (which a hand-edited or foreign
    file can hold, and JSON cannot) become null."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_block(element_id: str, value: Any) -> str:
    """`value` as a JSON data block the HTML parser cannot break out of."""
    text = to_json(value)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{element_id}">{text}</script>\n'


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _attrs(name: str) -> str:
    # Prism highlights nothing by itself: the front end calls Prism.tokenize and builds text nodes.
    return " data-manual" if name == "vendor/prism.js" else ""


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
