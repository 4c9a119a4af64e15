"""ASGI entry point (uvicorn; gunicorn with uvicorn workers in the Procfile): /mcp/ goes to the MCP
server's streamable HTTP app, everything else to Django.

The MCP SDK's HTTP transport is a Starlette app with a lifespan (its session manager's task group), so it
cannot live inside a Django view; one process serves both, and the lifespan goes to the MCP app. Django
runs as the WSGI app it is under gunicorn (a2wsgi, a thread pool with a bounded send queue), not through
Django's ASGI handler: that handler buffers a StreamingHttpResponse with a synchronous iterator whole in
memory, and the CSV/JSON exports (audits.exports) must stream an audit of any size in bounded memory.
"""

import os

from a2wsgi import WSGIMiddleware
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

DJANGO_THREADS = 10  # Django requests served at once per process (as many threads as gunicorn's gthread)

django_app = WSGIMiddleware(get_wsgi_application(), workers=DJANGO_THREADS)  # also sets Django up

from assistants.server import MCP_PATH, http_app  # noqa: E402  (needs the apps loaded above)

mcp_app = http_app()


async def application(scope, receive, send):
    path = scope.get("path", "")
    if scope["type"] == "lifespan" or path == MCP_PATH.rstrip("/") or path.startswith(MCP_PATH):
        return await mcp_app(scope, receive, send)
    return await django_app(scope, receive, send)
