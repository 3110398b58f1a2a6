"""A tiny budgeted toolset used to test `arena_kit.toolset.SerialToolset` through real MCP sessions."""

import asyncio

import verifiers.v1 as vf
from mcp.server.mcpserver.exceptions import ToolError

from arena_kit.toolset import SerialToolset


class CounterState(vf.State):
    budget: int = 3
    used: int = 0


class CounterToolset(SerialToolset[vf.ToolsetConfig, CounterState]):
    TOOL_PREFIX = "counter"

    @vf.tool
    async def spend(self) -> str:
        """Spend one unit of budget."""
        used = self.state.used
        await asyncio.sleep(0.05)  # widen the race window between pull and push
        if used >= self.state.budget:
            raise ToolError(f"budget spent ({used} of {self.state.budget})")
        self.state.used = used + 1
        return f"used {self.state.used} of {self.state.budget}"


if __name__ == "__main__":
    CounterToolset.run()
