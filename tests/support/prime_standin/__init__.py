"""A local stand-in of the Prime sandbox API, backed by local Docker containers — TEST-ONLY.

A contract test of OUR side of the Prime path: the real `prime-sandboxes` client and verifiers'
real prime runtime talk to it through `PRIME_API_BASE_URL`, over the REST control plane (create
with `vm: true`, status batchGet and GET, auth, error-context, background-job status batchGet,
egress policy, DELETE), the gateway's ConnectRPC `command_session.CommandSession` (Start, Connect,
SendInput, SendSignal) and the gateway file routes (upload, download, read-file).
Each sandbox is one `docker run` container labelled `arena.managed=true` and
`arena.prime-standin=<session>`, removed on DELETE and when the stand-in stops; its `/tmp` is an
empty tmpfs, as on a Prime VM (it hides what the image put there).

It proves NEITHER Prime's image builder (images are used as the local engine has them), NOR its
tunnels (`tunnel.BridgeTunnel` replaces them), the tmpfs's size, egress enforcement (policies are
recorded, not applied), auth expiry, quotas or scale.
"""

from prime_standin.engine import MANAGED_LABEL, STANDIN_LABEL
from prime_standin.serve import API_KEY, StandIn, running
from prime_standin.tunnel import BridgeTunnel

__all__ = ["API_KEY", "MANAGED_LABEL", "STANDIN_LABEL", "BridgeTunnel", "StandIn", "running"]
