"""`arena view`: browse runs, episodes and transcripts in a browser, served locally (following runs
as they grow) or exported as one self-contained HTML file. `catalog` reads and follows the runs
(`discover`, `run`, `rows`, `summary`, `transcript`, `search`, `probes`, `prices` do one job each),
`page` builds the page and its policy, `export` writes the file, `server` serves, `static/` is the
front end."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arena.view.catalog import Catalog, load_catalog

__all__ = ["Catalog", "export_html", "load_catalog"]


def export_html(paths: Sequence[Path], out: Path) -> int:
    """Write every run under `paths` into one HTML file; returns its size in bytes.

    Raises:
        PrerequisiteError: a path is missing or holds no run.
        UsageError: `out` cannot be written, or no run has an episode.
    """
    from arena.view.export import export_page

    return export_page(load_catalog(paths), out)
