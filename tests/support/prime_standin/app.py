"""The stand-in's HTTP surface: Prime's REST control plane under `/api/v1`, and per box a gateway
(`/gateway/standin/<id>`) with the file routes and the ConnectRPC command sessions."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from prime_standin import engine
from prime_standin.boxes import Box, Boxes
from prime_standin.sessions import SERVICE, CommandSessionApp, CommandSessions

_JOB_ID = re.compile(r"[0-9a-f]{8}")
# Mirrors the SDK's own per-job probe (`_background_job_status_command`): the exit code once the
# exit file has content, nothing while the job's pid still runs it, else "lost".
_JOB_STATUS = (
    'f=/tmp/job_$0.exit; grep -s . "$f" && exit; '
    'grep -qF "$f" /proc/$(cat /tmp/job_$0.launch/pid 2>/dev/null)/cmdline 2>/dev/null && exit; '
    'grep -s . "$f" || echo lost'
)


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


class StandInApp:
    """ASGI app: ConnectRPC paths go to the command-session app, everything else to Starlette."""

    def __init__(self, boxes: Boxes, api_key: str, gateway_url: str, batch_status: bool = True) -> None:
        self.boxes, self.api_key, self.gateway_url = boxes, api_key, gateway_url
        self.batch_status = batch_status
        """False answers both batchGet routes 404, as a platform without them does (the SDK then polls one by one)."""
        self.sessions = CommandSessions(boxes)
        self.rpc = CommandSessionApp(self.sessions)
        self.idempotency: dict[str, Box] = {}
        api, gw = "/api/v1/sandbox", "/gateway/standin/{sandbox_id}"
        self.http = Starlette(
            routes=[
                Route(api, self.create, methods=["POST"]),
                Route(f"{api}/status:batchGet", self.statuses, methods=["POST"]),
                Route(f"{api}/background-jobs/status:batchGet", self.job_statuses, methods=["POST"]),
                Route(f"{api}/{{sandbox_id}}", self.get, methods=["GET"]),
                Route(f"{api}/{{sandbox_id}}", self.delete, methods=["DELETE"]),
                Route(f"{api}/{{sandbox_id}}/auth", self.auth, methods=["POST"]),
                Route(f"{api}/{{sandbox_id}}/error-context", self.error_context, methods=["GET"]),
                Route(f"{api}/{{sandbox_id}}/egress-policy", self.egress, methods=["GET", "PUT"]),
                Route(f"{gw}/upload", self.upload, methods=["POST"]),
                Route(f"{gw}/download", self.download, methods=["GET"]),
                Route(f"{gw}/read-file", self.read_file, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/gateway/") and f"{SERVICE}/" in path:
            await self.rpc({**scope, "root_path": path[: path.index(SERVICE)]}, receive, send)
            return
        if scope["type"] == "http":
            self.boxes.calls.append(f"{scope['method']} {re.sub(r'/[0-9a-f]{12}(?=/|$)', '/{id}', path)}")
        await self.http(scope, receive, send)

    # --- control plane ------------------------------------------------------------------

    def _api_box(self, request: Request) -> Box | Response:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "API key unauthorized")
        box = self.boxes.by_id.get(request.path_params.get("sandbox_id", ""))
        return box if box is not None else _error(404, "sandbox not found")

    def _authorised(self, request: Request, batch: bool = False) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "API key unauthorized")
        return _error(404, "batch status is not supported here") if batch and not self.batch_status else None

    async def create(self, request: Request) -> Response:
        if denied := self._authorised(request):
            return denied
        payload: dict[str, Any] = await request.json()
        if not payload.get("docker_image"):
            return _error(422, "docker_image is required (checkpoints are not part of the stand-in)")
        key = str(payload.get("idempotency_key") or "")
        box = self.idempotency.get(key) if key else None
        if box is None:
            box = self.boxes.create(payload)
            if key:
                self.idempotency[key] = box
        return JSONResponse(box.record())

    async def statuses(self, request: Request) -> Response:
        if denied := self._authorised(request, batch=True):
            return denied
        ids = (await request.json())["sandbox_ids"]
        found = [self.boxes.by_id[i] for i in ids if i in self.boxes.by_id]
        missing = [
            {"sandbox_id": i, "code": "NOT_FOUND", "message": "sandbox not found"}
            for i in ids
            if i not in self.boxes.by_id
        ]
        return JSONResponse({"statuses": [b.snapshot() for b in found], "errors": missing})

    async def job_statuses(self, request: Request) -> Response:
        if denied := self._authorised(request, batch=True):
            return denied
        statuses, errors = [], []
        for job in (await request.json())["jobs"]:
            sid, jid = job["sandbox_id"], job["job_id"]
            box = self.boxes.by_id.get(sid)
            fail = {"sandbox_id": sid, "job_id": jid}
            if box is None or not _JOB_ID.fullmatch(jid):
                errors.append({**fail, "code": "NOT_FOUND", "message": "no such sandbox or job"})
                continue
            if box.status != "RUNNING":
                errors.append({**fail, "code": "NOT_RUNNING", "message": f"sandbox is {box.status}"})
                continue
            out = (await engine.docker("exec", box.container, "sh", "-c", _JOB_STATUS, jid)).stdout.decode().strip()
            if out == "lost":
                errors.append({**fail, "code": "RUNTIME_ERROR", "message": "job exited without recording an exit code"})
            else:
                statuses.append({**fail, "completed": bool(out), "exit_code": int(out) if out else None})
        return JSONResponse({"statuses": statuses, "errors": errors})

    async def get(self, request: Request) -> Response:
        box = self._api_box(request)
        return box if isinstance(box, Response) else JSONResponse(box.record())

    async def delete(self, request: Request) -> Response:
        box = self._api_box(request)
        if isinstance(box, Response):
            return box
        self.sessions.close_box(box)
        await self.boxes.delete(box)
        return JSONResponse({"success": True})

    async def auth(self, request: Request) -> Response:
        box = self._api_box(request)
        return box if isinstance(box, Response) else JSONResponse(box.auth(self.gateway_url))

    async def error_context(self, request: Request) -> Response:
        box = self._api_box(request)
        if isinstance(box, Response):
            return box
        return JSONResponse({"status": box.status, "errorType": box.error_type, "errorMessage": box.error_message})

    async def egress(self, request: Request) -> Response:
        box = self._api_box(request)
        if isinstance(box, Response):
            return box
        if request.method == "PUT":
            body = await request.json()
            box.egress = {"allowlist": body.get("allowlist"), "denylist": body.get("denylist")}
            box.egress_generation += 1
        return JSONResponse(box.egress_status())

    # --- gateway file routes ------------------------------------------------------------

    def _gateway_box(self, request: Request) -> Box | Response:
        token = (request.headers.get("authorization") or "").removeprefix("Bearer ")
        box = self.boxes.by_token(token)
        if box is None or box.id != request.path_params["sandbox_id"]:
            return _error(401, "unknown gateway token for this sandbox")
        if box.status == "TERMINATED":
            return JSONResponse({"error": "sandbox_terminated"}, status_code=410)
        return box

    async def upload(self, request: Request) -> Response:
        box = self._gateway_box(request)
        if isinstance(box, Response):
            return box
        path = request.query_params["path"]
        upload = (await request.form())["file"]
        data = await upload.read()  # type: ignore[union-attr]
        write = 'mkdir -p "$(dirname "$0")" && cat > "$0"'
        result = await engine.docker("exec", "-i", box.container, "sh", "-c", write, path, stdin=data)
        if result.code != 0:
            return _error(500, result.stderr.decode(errors="replace").strip())
        return JSONResponse(
            {"success": True, "path": path, "size": len(data), "timestamp": datetime.now(timezone.utc).isoformat()}
        )

    async def _cat(self, request: Request) -> bytes | Response:
        box = self._gateway_box(request)
        if isinstance(box, Response):
            return box
        result = await engine.docker("exec", box.container, "cat", "--", request.query_params["path"])
        if result.code != 0:
            return _error(404, f"file not found: {request.query_params['path']}")
        return result.stdout

    async def download(self, request: Request) -> Response:
        data = await self._cat(request)
        return data if isinstance(data, Response) else Response(data, media_type="application/octet-stream")

    async def read_file(self, request: Request) -> Response:
        # Like Prime's VM sandboxes today: offset/length are ignored and the whole file returned.
        data = await self._cat(request)
        if isinstance(data, Response):
            return data
        return JSONResponse({"content": data.decode(errors="replace"), "size": len(data)})
