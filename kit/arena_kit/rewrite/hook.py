"""Apply Arena's rewrite rules inside an environment's `@vf.intercept` hook, and record each one.

verifiers keeps only the hook's name in `trace.request_rewrites`; this keeps the rest: for every
denial or rewrite, an `AuditRecord` goes into `trace.info["arena_rewrites"]` (so it lands in
`traces.jsonl`) and, when Arena launched the eval, into `<run dir>/rewrites.jsonl` as it happens.
Records hold the original result's SHA-256 and an excerpt with every held-out string masked.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from arena_kit.records import REWRITES_FILE, RUN_DIR_ENV, AuditRecord
from arena_kit.rewrite.rules import Rule, match_post, match_pre, shell_command

if TYPE_CHECKING:
    # Types only: the hook runs inside vf-eval, which has verifiers loaded already; a reader of
    # the records or of `mask` outside vf-eval does not pay ~3.5 CPU-s for it.
    import verifiers.v1 as vf

__all__ = ["RUN_DIR_ENV", "AuditRecord", "apply_rules", "mask"]

EXCERPT_CHARS = 240
MASK = "[held-out]"


def mask(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


async def apply_rules(
    request: vf.Request, trace: vf.Trace, secrets: Sequence[str], environment: str, terms: Sequence[str] = ()
) -> vf.Request | None:
    """Deny a proposed shell call (probe) or rewrite a leaking result; None when no rule fires.

    `terms` name the environment's grader-side packages besides its own module (the environment
    id with `_` for `-`, always included), e.g. the toolset that holds its data."""
    from verifiers.v1.types import ToolMessage

    last = request.messages[-1]
    if not isinstance(last, ToolMessage):
        return None
    call = _find_call(request.messages, last.tool_call_id)
    tool = call.name if call else (last.name or "?")
    arguments = _arguments(call)
    if last.content == "":  # a pre-execution probe: the call has not run yet
        command = shell_command(tool, arguments)
        grader_terms = (environment.replace("-", "_"), *terms)
        rule = match_pre(command, secrets, grader_terms) if command is not None else None
        original = ""
    else:
        original = last.content if isinstance(last.content, str) else json.dumps(last.content, default=str)
        rule = match_post(original, secrets)
    if rule is None:
        return None
    _record(trace, rule, environment, tool, arguments, original, secrets)
    messages = [*request.messages[:-1], last.model_copy(update={"content": rule.replacement})]
    return request.model_copy(update={"messages": messages})


def _find_call(messages: Sequence, call_id: str) -> vf.ToolCall | None:
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call.id == call_id:
                return call
    return None


def _arguments(call: vf.ToolCall | None) -> dict:
    if call is None:
        return {}
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {"raw": call.arguments}
    return value if isinstance(value, dict) else {"value": value}


def _record(
    trace: vf.Trace, rule: Rule, environment: str, tool: str, arguments: dict, original: str, secrets: Sequence[str]
) -> None:
    data = trace.task.data if trace.task is not None else None
    record = AuditRecord(
        id=uuid.uuid4().hex,
        run=os.environ.get("VF_RUN_ID", ""),
        rollout=trace.id,
        harness=str(getattr(trace.agent.config.harness, "id", "?")) if trace.agent else "?",
        environment=environment,
        task=str(getattr(data, "name", None) or getattr(data, "idx", "?")),
        rule=rule.id,
        stage=rule.stage,
        tool=tool,
        arguments={key: mask(value, secrets) if isinstance(value, str) else value for key, value in arguments.items()},
        original_sha256=hashlib.sha256(original.encode()).hexdigest(),
        original_excerpt=mask(original, secrets)[:EXCERPT_CHARS],
        replacement=rule.replacement,
        time=time.time(),
    )
    trace.info.setdefault("arena_rewrites", []).append(record.model_dump())
    run_dir = os.environ.get(RUN_DIR_ENV)
    if run_dir:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        with open(Path(run_dir) / REWRITES_FILE, "a") as out:
            out.write(record.model_dump_json() + "\n")
