"""The dashboard's web service: one page (map, jobs, trade charts, savepoints, health), its
JSON API and ``/metrics``, all read-only and served on loopback by uvicorn.

The page loads nothing from elsewhere: its script, style and map are files of this package,
and every answer carries a ``Content-Security-Policy`` that lets the browser fetch from this
origin only, so a page that tried would be refused (and the e2e test would see it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST

from streamops.dashboard import data, metrics, resources
from streamops.settings import Settings

log = logging.getLogger("streamops.dashboard")

STATIC = Path(__file__).with_name("static")
CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'"


def create_app(settings: Settings, store_url: str | None = None) -> FastAPI:
    """The app for the state root of ``settings`` and the fleet store at ``store_url``
    (default: the state root's SQLite file, where the local stack's job writes)."""
    store = data.FleetStore(store_url or settings.layout.default_store_url)
    trades = data.TradeSeries(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()
        trades.close()

    app = FastAPI(title="streamops dashboard", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.requests = []  # paths asked for, newest last (what the e2e test checks)

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        app.state.requests = [*app.state.requests[-999:], str(request.url)]
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["Cache-Control"] = "no-store"
        return response

    # Plain ``def`` endpoints: the reads block (SQLite, files, a probe of beta), so FastAPI
    # runs them in its thread pool and the page's other requests are not held up.
    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/api/vehicles")
    def vehicles() -> Response:
        # encoded here, not by FastAPI's encoder: it walks every value of 10k rows (3x slower)
        body = json.dumps(store.positions(), separators=(",", ":"))
        return Response(body, media_type="application/json")

    @app.get("/api/vehicles/{vin}")
    def vehicle(vin: str) -> dict[str, Any]:
        row = store.vehicle(vin)
        if row is None:
            raise HTTPException(404, f"no vehicle {vin}")
        return row

    @app.get("/api/series")
    def series(symbol: str | None = None) -> dict[str, Any]:
        return trades.chart(symbol)

    @app.get("/api/jobs")
    def jobs() -> list[dict[str, Any]]:
        return [j.to_json() for j in data.gather_jobs(settings)]

    @app.get("/api/savepoints")
    def savepoints() -> list[dict[str, Any]]:
        return data.savepoints(settings)

    @app.get("/api/resources")
    def declared() -> dict[str, Any]:
        return resources.resources(settings)

    @app.get("/api/health")
    def health() -> list[dict[str, Any]]:
        return data.health_history(settings)

    @app.get("/api/requests", include_in_schema=False)
    def requests_seen() -> JSONResponse:
        return JSONResponse(app.state.requests)

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(metrics.render(settings), media_type=CONTENT_TYPE_LATEST)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int | None = None,
          store_url: str | None = None) -> None:  # fmt: skip
    """Run the dashboard in the foreground until interrupted (``streamops dashboard``)."""
    import uvicorn

    port = port or settings.dashboard_port
    log.info("dashboard on http://%s:%s (state root %s)", host, port, settings.state_root)
    uvicorn.run(create_app(settings, store_url), host=host, port=port, log_level="warning")
