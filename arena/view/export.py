"""`arena view --export`: the whole catalog as one HTML file that opens from `file://` with no
network. The runs page's data is a JSON block; each run's rows, and each episode's transcript, are
deflate-compressed base64 blocks the page inflates (the browser's own DecompressionStream) when they
are opened, so 1,000 demo-sized episodes weigh a few MB, not 30. Written block by block, so memory
stays that of one episode. Raw `traces.jsonl` lines are not embedded (they would double the size):
the served viewer shows them."""

from __future__ import annotations

import base64
import os
import zlib
from pathlib import Path

from arena.errors import UsageError
from arena.view.catalog import Catalog
from arena.view.page import export_shell, json_block, to_json

__all__ = ["export_page"]


def export_page(catalog: Catalog, out: Path) -> int:
    """Write the catalog as one HTML file; returns its size in bytes.

    Raises:
        UsageError: `out` cannot be written (a directory, a missing or read-only folder), or
            every run is empty.
    """
    if not any(run.rows for run in catalog.runs.values()):
        names = ", ".join(str(run.path) for run in catalog.runs.values())
        raise UsageError(f"no episodes: {names} hold{'s' if len(catalog.runs) == 1 else ''} no finished episode to export")
    if out.is_dir():
        raise UsageError(f"--export {out} is a directory: give a file name, e.g. {out / 'view.html'}")
    head, tail = export_shell()
    index = catalog.index()
    ids = list(catalog.runs)
    partial = out.with_name(f".{out.name}.partial")
    try:
        with partial.open("w", encoding="utf-8") as f:
            f.write(head)
            f.write(json_block("arena-index", {**index, "export": True, "pairs": catalog.pairs(ids)}))
            for n, rid in enumerate(ids):
                f.write(_packed(f"run-{n}", to_json(catalog.rows(rid))))
                for i in range(len(catalog.runs[rid].rows)):
                    f.write(_packed(f"ep-{n}-{i}", to_json(_page(catalog, rid, i))))
            f.write(tail)
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(f"cannot write --export {out}: {exc.strerror or exc}; give a file in a folder you can write") from None
    return out.stat().st_size


def _page(catalog: Catalog, rid: str, index: int) -> dict[str, object]:
    try:
        return catalog.episode(rid, index)
    except UsageError as exc:
        return {"run": rid, "i": index, "missing": str(exc)}


def _packed(element_id: str, text: str) -> str:
    """`text` deflated (raw, no header: DecompressionStream('deflate-raw')) and base64'd: nothing in
    it the HTML parser reads as markup."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = deflate.compress(text.encode()) + deflate.flush()
    return f'<script type="application/x-arena-deflate" id="{element_id}">{base64.b64encode(data).decode()}</script>\n'
