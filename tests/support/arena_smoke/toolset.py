"""The smoke taskset's MCP toolset: one `note` tool that records its argument in the rollout state."""

from __future__ import annotations

import verifiers.v1 as vf


class SmokeState(vf.State):
    notes: list[str] = []


class SmokeToolset(vf.Toolset[vf.SharedToolsetConfig, SmokeState]):
    TOOL_PREFIX = "smoke"

    @vf.tool
    def note(self, text: str) -> str:
        """Record a short note. Returns `noted: <text>`."""
        self.state.notes.append(text)
        return f"noted: {text}"


if __name__ == "__main__":
    SmokeToolset.run()
