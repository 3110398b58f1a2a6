"""Turns engine replies into the text the agent reads: bounded, with clear truncation markers."""

from __future__ import annotations

import json

TRUNCATED = "[output truncated"


def _cell(value: object) -> object:
    if isinstance(value, dict) and "blob" in value:
        return f"<blob {value['bytes']} bytes: x'{value['blob']}'>"
    if isinstance(value, dict) and "text" in value:
        return value["text"] + f"…[{value['chars']} chars]"
    return value


def _first_line(sql: str) -> str:
    lines = [line for line in sql.splitlines() if line.strip()]
    return lines[0][:80] if lines else ""


def _row(row: list) -> str:
    return json.dumps([_cell(v) for v in row], ensure_ascii=False)


def execute_result(reply: dict, max_chars: int) -> str:
    """Each statement's columns and rows as JSON arrays, one row per line, within `max_chars`."""
    lines: list[str] = []
    budget = max_chars
    cut = False
    for entry in reply["results"]:
        head = f"-- statement {entry['statement']}: {_first_line(entry['sql'])}"
        lines.append(head)
        if "columns" in entry:
            lines.append("columns: " + json.dumps(entry["columns"], ensure_ascii=False))
            shown = 0
            for row in entry["rows"]:
                text = _row(row)
                if budget - len(text) < 0:
                    cut = True
                    break
                budget -= len(text) + 1
                lines.append(text)
                shown += 1
            more = entry["truncated"] or shown < len(entry["rows"])
            if more:
                lines.append(
                    f"{TRUNCATED}: showed {shown} rows; add LIMIT/OFFSET or a WHERE clause to see others]"
                )
            else:
                lines.append(f"({shown} row{'s' if shown != 1 else ''})")
        else:
            lines.append(f"ok, {entry['changes']} row(s) changed")
        if cut:
            remaining = len(reply["results"]) - reply["results"].index(entry) - 1
            if remaining:
                lines.append(f"{TRUNCATED}: {remaining} more statement result(s) not shown]")
            break
    if reply.get("ignored"):
        lines.append(
            "note: BEGIN/COMMIT/END statement(s) "
            + ", ".join(map(str, reply["ignored"]))
            + " were ignored: every call already runs as one transaction"
        )
    lines.append(f"committed {reply['statements']} statement(s).")
    return "\n".join(lines)


def execute_error(reply: dict) -> str:
    where = f" at statement {reply['statement']} of {reply['statements']}" if reply.get("statement") else ""
    sql = f" ({_first_line(reply['sql'])})" if reply.get("sql") else ""
    return (
        f"SQL error{where}{sql}: {reply['error']}. The whole call was rolled back; the database is unchanged."
    )


def schema_result(reply: dict) -> str:
    lines: list[str] = []
    for obj in reply["objects"]:
        sql = obj["sql"].strip().rstrip(";") + ";"
        if obj["type"] == "table":
            sql += f"  -- {reply['row_counts'].get(obj['name'], 0)} rows"
        lines.append(sql)
    return "\n".join(lines) if lines else "(the database has no tables)"
