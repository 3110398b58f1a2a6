"""The bench's MCP toolset: one `stamp` tool that counts its calls in the rollout state.

One config type serves both placements (`ToolsetConfig` has every field a shared server reads).
"""

from __future__ import annotations

import verifiers.v1 as vf


class BenchState(vf.State):
    stamps: int = 0


class BenchToolset(vf.Toolset[vf.ToolsetConfig, BenchState]):
    TOOL_PREFIX = "bench"

    @vf.tool
    def stamp(self, text: str) -> str:
        """Record that the rollout reached its tool call. Returns `stamped: <text>`."""
        self.state.stamps += 1
        return f"stamped: {text}"


if __name__ == "__main__":
    BenchToolset.run()
