"""Start-up hook of the harness image's ACP runner envs: pydantic stops reading field docstrings from source.

verifiers' ACP runner starts once per claude_code or codex rollout and imports `acp.schema`
(agent-client-protocol): ~270 pydantic models whose base sets `use_attribute_docstrings=True`. Before
Python 3.13, pydantic finds each model's source by walking the call stack and re-reading the class
block (`pydantic._internal._docs_extraction`): measured in the harness image, 1.2-1.4 CPU-s to import
`acp` and `httpx`, 0.7-0.9 with this hook. A docstring only becomes a field's `description` (JSON
schema text); nothing the runner validates, sends or answers depends on one, so every message stays
the same. A `.pth` line in those envs loads this module; the agent's own Python never sees it.
"""

from __future__ import annotations


def _skip_field_docstrings() -> None:
    try:
        import pydantic
        from pydantic._internal import _fields
    except ImportError:  # an env without pydantic: nothing to do
        return
    # Only on the pydantic major whose `collect_model_fields` calls this name; elsewhere a no-op.
    if pydantic.VERSION.split(".")[0] == "2" and hasattr(_fields, "extract_docstrings_from_cls"):
        _fields.extract_docstrings_from_cls = lambda cls, use_inspect=False: {}


_skip_field_docstrings()
