"""Write a new environment package from the templates beside this module, all or nothing.

The templates (`template/`, jinja2 with strict undefined names) mirror the package's tree: `package/`
becomes the import package, `test_package.py` its test file, and `.jinja` is dropped. The files are
rendered first, written into a temporary folder beside the target, and the folder renamed into
place: a name or render error, a full disk or an interrupt leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import jinja2

from arena.errors import UsageError
from arena.new_env.names import Names

__all__ = ["TEMPLATE_DIR", "render", "write"]

TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
SUFFIX = ".jinja"


def render(names: Names) -> dict[Path, str]:
    """Relative path → text of every file of the new package."""
    engine = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    values = {"env_id": names.env_id, "pkg": names.package, "cls": names.classes}
    files = {}
    for source in sorted(TEMPLATE_DIR.rglob(f"*{SUFFIX}")):
        relative = source.relative_to(TEMPLATE_DIR).as_posix()
        target = (
            relative.removesuffix(SUFFIX)
            .replace("package/", f"{names.package}/")
            .replace("test_package", f"test_{names.package}")
        )
        files[Path(target)] = engine.get_template(relative).render(values)
    return files


def write(directory: Path, files: dict[Path, str]) -> list[Path]:
    """Write `files` under `directory`, which must not exist yet; returns the paths written.

    Raises:
        UsageError: `directory` exists, or its parent folder does not.
    """
    if directory.exists():
        raise UsageError(f"{directory} exists already; give a new folder with --dir")
    if not directory.parent.is_dir():
        raise UsageError(f"the folder {directory.parent} does not exist; create it, or give another --dir")
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [directory / relative for relative in files]
