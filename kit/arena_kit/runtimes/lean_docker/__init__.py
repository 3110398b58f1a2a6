"""The lean docker runtime: `engine` (the Engine API client and its exec), `exec_wire` (an attached exec
start on the wire), `netns` (a listener inside a box's network namespace), `process` (a live process on
one hijacked exec stream), `faults` (its typed infrastructure faults), `runtime` (`LeanDockerRuntime`) and `pool` (boxes booted
ahead of demand, `BoxPool`).

Nothing is imported here: a tool server that only borrows boxes through `runtime` must not pay for
what it does not use, and `faults` must be readable without the docker SDK.
"""
