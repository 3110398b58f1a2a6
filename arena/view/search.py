"""Full-text search over a run's transcripts: what a reader sees of an episode (its task, grade
reason, messages, reasoning, tool calls and their arguments, results, rewrites and errors), matched
case-insensitively as a plain substring. The front end matches the same text the same way within
one episode (and, in an exported file, across a run)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

__all__ = ["MAX_QUERY", "SearchIndex", "search_text"]

MAX_QUERY = 500


def search_text(task: str, page: Mapping[str, Any]) -> str:
    """The searchable text of one episode's page (`arena.view.transcript.transcript`), lower-cased."""
    parts = [task, str((page.get("grade") or {}).get("reason") or "") if isinstance(page.get("grade"), dict) else ""]
    for item in page.get("items") or []:
        parts += [str(item.get("text") or ""), str(item.get("reasoning") or ""), str(item.get("call") or "")]
        for call in item.get("calls") or []:
            parts += [call["name"], call["text"], json.dumps(call["args"], ensure_ascii=False) if call["args"] else ""]
            parts += [v for v in (call["args"] or {}).values() if isinstance(v, str)]
        rewrite = item.get("rewrite") or (item if item.get("kind") == "rewrite" else None)
        if rewrite:
            parts += [rewrite["rule"], rewrite["replacement"]]
    parts += [f"{e['type']} {e['message']}" for e in page.get("errors") or []]
    return "\n".join(p for p in parts if p).lower()


@dataclass
class SearchIndex:
    """A run's searchable texts, built on the first search and extended as the run grows."""

    rows: object = None
    """The run's row list the texts belong to (a run read anew has a new one)."""
    texts: list[str] = field(default_factory=list)
    lock: Lock = field(default_factory=Lock)

    def search(self, query: str, count: int, text_of: Callable[[int], str]) -> list[dict[str, int]]:
        """Episodes (of the first `count`) whose text holds `query`, with how many times."""
        needle = query.lower()[:MAX_QUERY]
        with self.lock:
            while len(self.texts) < count:
                self.texts.append(text_of(len(self.texts)))
            texts = self.texts[:count]
        return [{"i": i, "hits": text.count(needle)} for i, text in enumerate(texts) if needle and needle in text]
