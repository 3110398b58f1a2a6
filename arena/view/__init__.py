"""`arena view`: browse runs, episodes and transcripts in a browser, served locally or exported
as one self-contained HTML file (`load` reads the runs, `page` builds the page and its policy,
`server` serves it, `static/` is the front end)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arena.view.load import Catalog, load_catalog

__all__ = ["Catalog", "export_html", "load_catalog", "serve_view"]


def export_html(paths: Sequence[Path], out: Path) -> int:
    """Write every run under `paths` into one HTML file; returns its size in bytes.

    Raises:
        PrerequisiteError: a path holds no run.
    """
    from arena.view.page import export_page

    return export_page(load_catalog(paths), out)


def serve_view(paths: Sequence[Path], host: str = "127.0.0.1", port: int = 8777) -> None:
    """Serve the runs under `paths` until interrupted.

    Raises:
        PrerequisiteError: a path holds no run.
        OSError: the address could not be bound.
    """
    from arena.view.server import run_server

    run_server(load_catalog(paths), host, port)
