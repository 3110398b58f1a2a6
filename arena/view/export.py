"""`arena view --export`: the whole catalog as one HTML file that opens from `file://` with no
network. The runs page's data is a JSON block; each run's rows, and each episode's transcript, are
deflate-compressed base64 blocks the page inflates (the browser's own DecompressionStream) when they
are opened. A run's episodes share most of their shape and much of their text (system prompt, prompt
template, task data), which one episode's compression cannot see: each is compressed after the run's
first transcript as a preset (`Packer`), whose compressed form is stored once per run and put in
front of an episode's bytes when it is inflated. Written block by block, so memory stays that of one
episode. Raw `traces.jsonl` lines are not embedded (they would double the size): the served viewer
shows them."""

from __future__ import annotations

import base64
import os
import zlib
from pathlib import Path

from arena.errors import UsageError
from arena.view.catalog import Catalog
from arena.view.page import export_shell, json_block, to_json

__all__ = ["WINDOW", "Packer", "export_page"]

WINDOW = 32768
"""Deflate's window: how much of a preset an episode's compression can refer back to."""


def export_page(catalog: Catalog, out: Path) -> int:
    """Write the catalog as one HTML file; returns its size in bytes.

    Raises:
        UsageError: `out` cannot be written (a directory, a missing or read-only folder), or
            every run is empty.
    """
    if not any(run.rows for run in catalog.runs.values()):
        names = ", ".join(str(run.path) for run in catalog.runs.values())
        raise UsageError(
            f"no episodes: {names} hold{'s' if len(catalog.runs) == 1 else ''} no finished episode to export"
        )
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
                f.write(_block(f"run-{n}", Packer(b"").pack(to_json(catalog.rows(rid)))))
                count = len(catalog.runs[rid].rows)
                packer = Packer(to_json(_page(catalog, rid, 0)).encode()[-WINDOW:] if count else b"")
                f.write(_block(f"preset-{n}", packer.prefix, skip=packer.skip))
                for i in range(count):
                    f.write(_block(f"ep-{n}-{i}", packer.pack(to_json(_page(catalog, rid, i))), preset=f"preset-{n}"))
            f.write(tail)
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise UsageError(
            f"cannot write --export {out}: {exc.strerror or exc}; give a file in a folder you can write"
        ) from None
    return out.stat().st_size


def _page(catalog: Catalog, rid: str, index: int) -> dict[str, object]:
    try:
        return catalog.episode(rid, index)
    except UsageError as exc:
        return {"run": rid, "i": index, "missing": str(exc)}


class Packer:
    """Raw deflate after a preset text: `prefix` is the preset compressed and flushed to a byte
    boundary, the same for every `pack`; `prefix + pack(text)` inflates to `preset + text`, so a
    reader inflates both and drops the preset's `skip` bytes."""

    def __init__(self, preset: bytes) -> None:
        self._state = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.prefix = self._state.compress(preset) + self._state.flush(zlib.Z_SYNC_FLUSH)
        self.skip = len(preset)

    def pack(self, text: str) -> bytes:
        state = self._state.copy()
        return state.compress(text.encode()) + state.flush()


def _block(element_id: str, data: bytes, preset: str = "", skip: int = 0) -> str:
    """Bytes as a base64 data block: nothing in it the HTML parser reads as markup. The ids and
    numbers in its attributes are ours, never a trace's."""
    extra = (f' data-preset="{preset}"' if preset else "") + (f' data-skip="{skip}"' if skip else "")
    return f'<script type="application/x-arena-deflate" id="{element_id}"{extra}>{base64.b64encode(data).decode()}</script>\n'
