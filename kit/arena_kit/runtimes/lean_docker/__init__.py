"""The lean docker runtime: `engine` (the Engine API client and its exec), `exec_wire` (an attached exec
start on the wire), `netns` (a listener inside a box's network namespace), `process` (a live process on
one hijacked exec stream), `hardening` and `box_users` (the limits and user files a box is created with),
`box_create` (creating and starting a box), `box_files` (root reads without an exec), `failures` (a failed
call typed by the engine's word on the box), `prestart` (a program loaded ahead of its run), `runtime`
(`LeanDockerRuntime`) and `pool` (boxes booted ahead of demand, `BoxPool`).

Nothing is imported here: a tool server that only borrows boxes through `runtime` must not pay for
what it does not use.
"""
