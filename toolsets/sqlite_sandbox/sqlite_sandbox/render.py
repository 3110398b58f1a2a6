"""Turns engine replies into the text the agent reads: bounded as a whole, with clear truncation markers."""

from __future__ import annotations

import json
from typing import Any

TRUNCATED = "[output truncated"
MARKER_ROOM = 120
"""Characters kept free for a truncation marker (the longest one is about 100)."""
LISTED_IGNORED = 10
"""Ignored BEGIN/COMMIT/END statements named one by one in the closing note; the rest are counted."""


class _Page:
    """Lines joined by newlines, added only while the whole text stays within `room` characters."""

    def __init__(self, room: int) -> None:
        self.lines: list[str] = []
        self.room = room

    def cost(self, line: str) -> int:
        return len(line) + (1 if self.lines else 0)

    def add(self, line: str, keep: int = 0) -> bool:
        """Add `line` if it fits and leaves `keep` characters free; say whether it was added."""
        if self.cost(line) + keep > self.room:
            return False
        self.room -= self.cost(line)
        self.lines.append(line)
        return True

    def text(self) -> str:
        return "\n".join(self.lines)


def _cell(value: object) -> object:
    if isinstance(value, dict) and "blob" in value:
        return f"<blob {value['bytes']} bytes: x'{value['blob']}'>"
    if isinstance(value, dict) and "text" in value:
        return value["text"] + f"…[{value['chars']} chars]"
    return value


def _first_line(sql: str) -> str:
    lines = [line for line in sql.splitlines() if line.strip()]
    return lines[0][:80] if lines else ""


def _row(row: list[object]) -> str:
    return json.dumps([_cell(v) for v in row], ensure_ascii=False)


def _columns(page: _Page, names: list[str], keep: int) -> bool:
    """The column-names line, or as many leading names as fit with a count of the others."""
    if page.add("columns: " + json.dumps(names, ensure_ascii=False), keep):
        return True
    label = f"columns ({len(names)}, {{}} shown): "
    width, shown = len(label) + 2 + 3, 0  # "[]" and room for a 3-digit count
    for name in names:
        width += len(json.dumps(name, ensure_ascii=False)) + (2 if shown else 0)
        if page.cost("x" * width) + keep > page.room:
            break
        shown += 1
    return page.add(label.format(shown) + json.dumps(names[:shown], ensure_ascii=False), keep)


def _closing(reply: dict[str, Any]) -> list[str]:
    lines = []
    if ignored := reply.get("ignored"):
        listed = ", ".join(map(str, ignored[:LISTED_IGNORED])) + (
            f" and {len(ignored) - LISTED_IGNORED} more" if len(ignored) > LISTED_IGNORED else ""
        )
        lines.append(
            f"note: BEGIN/COMMIT/END statement(s) {listed} were ignored: every call already runs as one transaction"
        )
    lines.append(f"committed {reply['statements']} statement(s).")
    return lines


def execute_result(reply: dict[str, Any], max_chars: int) -> str:
    """Each statement's columns and rows as JSON arrays, one row per line; the whole text (headers,
    column names, markers and notes included) is at most `max_chars` characters."""
    closing = "\n".join(_closing(reply))
    page = _Page(max_chars - len(closing) - 1)
    # Every ordinary line leaves room for two markers: the cut statement's and "n more not shown".
    keep = 2 * MARKER_ROOM
    results = reply["results"]
    for k, entry in enumerate(results):
        shown, cut = 0, False
        if not page.add(f"-- statement {entry['statement']}: {_first_line(entry['sql'])}", keep):
            page.add(f"{TRUNCATED}: {len(results) - k} more statement result(s) not shown]")
            break
        if "columns" in entry:
            cut = not _columns(page, entry["columns"], keep)
            for row in [] if cut else entry["rows"]:
                if not page.add(_row(row), keep):
                    cut = True
                    break
                shown += 1
            if cut or entry["truncated"]:
                page.add(
                    f"{TRUNCATED}: showed {shown} rows; add LIMIT/OFFSET or a WHERE clause to see others]", MARKER_ROOM
                )
            else:
                page.add(f"({shown} row{'s' if shown != 1 else ''})", keep)
        else:
            page.add(f"ok, {entry['changes']} row(s) changed", keep)
        if cut:
            if remaining := len(results) - k - 1:
                page.add(f"{TRUNCATED}: {remaining} more statement result(s) not shown]")
            break
    return f"{page.text()}\n{closing}" if page.lines else closing


def execute_error(reply: dict[str, Any], max_chars: int) -> str:
    """The error of a failed call, the error text cut to keep the whole within `max_chars`."""
    where = f" at statement {reply['statement']} of {reply['statements']}" if reply.get("statement") else ""
    sql = f" ({_first_line(reply['sql'])})" if reply.get("sql") else ""
    head = f"SQL error{where}{sql}: "
    tail = ". The whole call was rolled back; the database is unchanged."
    error = str(reply["error"])
    room = max(0, max_chars - len(head) - len(tail))
    if len(error) > room:
        cut = f"…[{len(error)} chars]"
        error = error[: max(0, room - len(cut))] + cut
    return head + error + tail


def schema_result(reply: dict[str, Any]) -> str:
    lines: list[str] = []
    for obj in reply["objects"]:
        sql = obj["sql"].strip().rstrip(";") + ";"
        if obj["type"] == "table":
            sql += f"  -- {reply['row_counts'].get(obj['name'], 0)} rows"
        lines.append(sql)
    return "\n".join(lines) if lines else "(the database has no tables)"
