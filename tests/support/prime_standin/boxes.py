"""The stand-in's sandboxes: one local container each, with the record the control plane reports."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from prime_standin import engine


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class Box:
    id: str
    name: str
    image: str
    request: dict[str, Any]
    """The create payload as the SDK sent it (tests read `vm`, labels and limits off it)."""
    container: str
    token: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    status: str = "PROVISIONING"
    error_type: str | None = None
    error_message: str | None = None
    created_at: str = field(default_factory=_now)
    egress: dict[str, Any] = field(default_factory=lambda: {"allowlist": None, "denylist": []})
    egress_generation: int = 0

    def record(self) -> dict[str, Any]:
        """The `Sandbox` JSON (camelCase, as the platform sends it)."""
        r = self.request
        return {
            "id": self.id,
            "name": self.name,
            "dockerImage": self.image,
            "cpuCores": r.get("cpu_cores", 1.0),
            "memoryGB": r.get("memory_gb", 1.0),
            "diskSizeGB": r.get("disk_size_gb", 5.0),
            "diskMountPath": "/",
            "gpuCount": r.get("gpu_count", 0),
            "vm": bool(r.get("vm")),
            "status": self.status,
            "timeoutMinutes": r.get("timeout_minutes", 60),
            "idleTimeoutMinutes": r.get("idle_timeout_minutes"),
            "environmentVars": r.get("environment_vars"),
            "labels": r.get("labels", []),
            "createdAt": self.created_at,
            "updatedAt": _now(),
            "errorType": self.error_type,
            "errorMessage": self.error_message,
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "sandbox_id": self.id,
            "status": self.status,
            "error_type": self.error_type,
            "error_message": self.error_message,
        }

    def auth(self, gateway_url: str) -> dict[str, Any]:
        expires = datetime.now(timezone.utc) + timedelta(hours=1)
        return {
            "gateway_url": gateway_url,
            "user_ns": "standin",
            "job_id": self.id,
            "token": self.token,
            "expires_at": expires.isoformat(),
        }

    def egress_status(self) -> dict[str, Any]:
        # Recorded, never enforced: the stand-in proves the calls, not Prime's egress filter.
        return {
            "policy": self.egress,
            "generation": self.egress_generation,
            "applied_generation": self.egress_generation,
            "applied": True,
        }


class Boxes:
    """Every sandbox of one stand-in session, by id and by gateway token."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.by_id: dict[str, Box] = {}
        self.deleted: set[str] = set()
        self.calls: list[str] = []
        """`METHOD route` of every control-plane and gateway call, in order (what the contract covered)."""

    def create(self, payload: dict[str, Any]) -> Box:
        box_id = engine.new_id()
        box = Box(
            id=box_id,
            name=str(payload.get("name") or box_id),
            image=str(payload["docker_image"]),
            request=payload,
            container=f"prime-standin-{box_id}",
        )
        self.by_id[box_id] = box
        asyncio.get_running_loop().create_task(self._provision(box))
        return box

    async def _provision(self, box: Box) -> None:
        argv = engine.run_argv(
            self.session,
            box.container,
            box.image,
            float(box.request.get("cpu_cores", 1.0)),
            float(box.request.get("memory_gb", 1.0)),
            dict(box.request.get("environment_vars") or {}),
        )
        result = await engine.docker(*argv)
        if box.id in self.deleted:
            await engine.docker("rm", "-f", box.container)
            return
        if result.code != 0:
            box.status, box.error_type = "ERROR", "PROVISIONING_FAILED"
            box.error_message = result.stderr.decode(errors="replace").strip()[-500:]
            return
        box.status = "RUNNING"

    async def delete(self, box: Box) -> None:
        box.status = "TERMINATED"
        self.deleted.add(box.id)
        await engine.docker("rm", "-f", box.container)

    def by_token(self, token: str) -> Box | None:
        return next((b for b in self.by_id.values() if secrets.compare_digest(b.token, token)), None)
