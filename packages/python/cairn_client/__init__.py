"""The Cairn Python client: the REST API's flows with the standard library only.

Live ingest and memory writes that can be waited for, queries in three modes, an idempotency key per call
kept across its retries (network errors, 429, 5xx, operation_in_progress), and one error type. `Client`
is synchronous; `AsyncClient` runs the same calls in a worker thread for asyncio code.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as _dt
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Callable, Optional

__all__ = ["CairnError", "Client", "AsyncClient", "Waitable"]

_TERMINAL = {"succeeded", "failed", "quarantined"}


class CairnError(Exception):
    """An answer other than 2xx, in the service's error envelope (status 0: no answer at all)."""

    def __init__(self, status: int, code: str, message: str, request_id: Optional[str] = None):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500 or self.code in ("operation_in_progress", "network_error")


class Waitable(dict):
    """A response (a dict) whose work goes on in the background; `wait()` returns its final state."""

    def __init__(self, body: dict, wait: Callable[[float], dict]):
        super().__init__(body)
        self._wait = wait

    def wait(self, timeout: float = 600.0) -> dict:
        return self._wait(timeout)


class Client:
    def __init__(self, base_url: str, api_key: str, retries: int = 4, poll_seconds: float = 0.25, timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.retries = max(1, retries)
        self.poll_seconds = poll_seconds
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One call, retried with the same body (so the same idempotency key) while the answer is retryable."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"authorization": f"Bearer {self.api_key}"}
        if data is not None:
            headers["content-type"] = "application/json"
        for attempt in range(1, self.retries + 1):
            retry_after = 0.0
            try:
                req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
                with urllib.request.urlopen(req, timeout=self.timeout) as res:
                    text = res.read().decode()
                    return json.loads(text) if text else None
            except urllib.error.HTTPError as e:
                text = e.read().decode(errors="replace")
                try:
                    env = json.loads(text).get("error", {})
                except ValueError:
                    env = {}
                error = CairnError(e.code, env.get("code", f"http_{e.code}"), env.get("message", e.reason), env.get("requestId"))
                retry_after = float(e.headers.get("retry-after") or 0)
            except (urllib.error.URLError, OSError) as e:
                error = CairnError(0, "network_error", str(e))
            if not error.retryable or attempt >= self.retries:
                raise error
            time.sleep(max(retry_after, 0.25 * 2 ** (attempt - 1)))
        raise AssertionError("unreachable")

    def _poll(self, read: Callable[[], dict], timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        wait = self.poll_seconds
        while True:
            value = read()
            if value["status"] in _TERMINAL:
                return value
            if time.monotonic() > deadline:
                raise CairnError(0, "timeout", f"still {value['status']} after {timeout} s")
            time.sleep(wait)
            wait = min(wait * 2, 2.0)

    # -- ingest --------------------------------------------------------------------------------------
    def job(self, job_id: str) -> dict:
        return self.request("GET", f"/v1/ingest/jobs/{urllib.parse.quote(job_id)}")["job"]

    def _ingest(self, path: str, body: dict) -> Waitable:
        body = {**body, "dryRun": False, "datedAt": body.get("datedAt") or _dt.date.today().isoformat(),
                "idempotencyKey": body.get("idempotencyKey") or str(uuid.uuid4())}
        job = self.request("POST", path, body)["job"]
        return Waitable(job, lambda timeout: self._poll(lambda: self.job(job["id"]), timeout))

    def ingest_url(self, url: str, **options: Any) -> Waitable:
        """A live URL ingest: the queued job; `.wait()` for its end."""
        return self._ingest("/v1/ingest/url", {"url": url, **options})

    def ingest_file(self, filename: str, content_type: str, data: bytes, **options: Any) -> Waitable:
        """A live file ingest (dated today unless datedAt is given): the queued job; `.wait()` for its end."""
        body = {"filename": filename, "contentType": content_type, "contentBase64": base64.b64encode(data).decode(), **options}
        return self._ingest("/v1/ingest/file", body)

    def plan_file(self, filename: str, content_type: str, data: bytes) -> dict:
        """A dry run: what a live ingest would store and cost; nothing is stored."""
        body = {"filename": filename, "contentType": content_type, "contentBase64": base64.b64encode(data).decode(), "dryRun": True}
        return self.request("POST", "/v1/ingest/file", body)["plan"]

    # -- query ---------------------------------------------------------------------------------------
    def query(self, text: str, mode: str = "evidence", **options: Any) -> dict:
        body = {**options, "mode": mode, "query": text, "idempotencyKey": options.get("idempotencyKey") or str(uuid.uuid4())}
        return self.request("POST", "/v1/query", body)

    def evidence(self, text: str, **options: Any) -> dict:
        return self.query(text, "evidence", **options)

    def context(self, text: str, **options: Any) -> dict:
        return self.query(text, "context", **options)

    def answer(self, text: str, **options: Any) -> dict:
        return self.query(text, "answer", **options)

    # -- memory --------------------------------------------------------------------------------------
    def _ws(self, workspace: str) -> str:
        return f"/v1/workspaces/{urllib.parse.quote(workspace, safe='')}"

    def peer(self, label: str, workspace: str = "default") -> dict:
        return self.request("POST", f"{self._ws(workspace)}/peers", {"id": label})

    def session(self, label: str, workspace: str = "default") -> dict:
        return self.request("POST", f"{self._ws(workspace)}/sessions", {"id": label})

    def event(self, event_id: str, workspace: str = "default") -> dict:
        return self.request("GET", f"{self._ws(workspace)}/events/{urllib.parse.quote(event_id)}")

    def add_messages(self, session: str, peer: str, messages: list, workspace: str = "default", **options: Any) -> Waitable:
        """Adds messages ({"role", "content"}) to a session as a peer: the receipt; `.wait()` until claims are derived."""
        body = {**options, "peer_id": peer, "messages": messages, "idempotency_key": options.get("idempotency_key") or str(uuid.uuid4())}
        receipt = self.request("POST", f"{self._ws(workspace)}/sessions/{urllib.parse.quote(session, safe='')}/messages", body)
        return Waitable(receipt, lambda timeout: self._poll(lambda: self.event(receipt["event_id"], workspace), timeout))


class AsyncClient:
    """The same calls for asyncio: each runs in a worker thread; `wait()` of a result is a coroutine too."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._sync = Client(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._sync, name)

        async def run(*args: Any, **kwargs: Any) -> Any:
            result = await asyncio.to_thread(call, *args, **kwargs)
            if isinstance(result, Waitable):
                sync_wait = result.wait
                result.wait = lambda timeout=600.0: asyncio.to_thread(sync_wait, timeout)  # type: ignore[method-assign]
            return result

        return run
