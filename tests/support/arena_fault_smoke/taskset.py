"""The fault-smoke taskset's classes: `num_tasks` identical tasks, scored by reading the box."""

from __future__ import annotations

import verifiers.v1 as vf

EXPECTED = "arena-fault-ok"


class FaultSmokeData(vf.TaskData):
    path: str = "done.txt"


class FaultSmokeTaskConfig(vf.TaskConfig):
    pass


class FaultSmokeTask(vf.Task[FaultSmokeData, vf.State, FaultSmokeTaskConfig]):
    @vf.reward(weight=1.0)
    async def wrote_file(self, runtime: vf.Runtime) -> float:
        # A missing file is a failed task (the shell still exits 0); a non-zero exit means the box
        # did not answer, and `read` then raises the engine's SandboxError, a fault to retry.
        result = await runtime.run(["sh", "-c", f"cat {self.data.path} 2>/dev/null; exit 0"], {})
        data = result.stdout if result.exit_code == 0 else (await runtime.read(self.data.path)).decode(errors="replace")
        return float(EXPECTED in data)


class FaultSmokeTasksetConfig(vf.TasksetConfig):
    task: FaultSmokeTaskConfig = FaultSmokeTaskConfig()
    num_tasks: int = 6
    """How many (identical) tasks the taskset yields."""


class FaultSmokeTaskset(vf.Taskset[FaultSmokeTask, FaultSmokeTasksetConfig]):
    def load(self):
        prompt = f"Write the text {EXPECTED} into done.txt in the working directory, then say DONE."
        for index in range(self.config.num_tasks):
            yield FaultSmokeTask(FaultSmokeData(prompt=prompt, name=f"fault-smoke#{index}"), self.config.task)
