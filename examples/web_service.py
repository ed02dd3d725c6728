"""A FastAPI web service that translates with lingodoc.AsyncClient.

    POST /translate  {"text": "Hello world", "source": "en", "target": "de"}
                     -> 200 {"translation": "Hallo Welt"}

* One ``AsyncClient`` for the life of the process, made and closed in the app's lifespan:
  it pools connections and is safe to share between the requests of one event loop.
* The endpoint awaits it, so a slow translation never holds up other requests, and gives
  it ``TIME_LIMIT`` seconds at most, the SDK's retries included.
* The SDK's exceptions become HTTP answers (``lingodoc_error``): the caller's mistakes a 422
  with the message; a spent rate limit a 503 with ``Retry-After``; a timeout a 504; our own
  key refused a 500; any other failure a 502. The details of a failure go to the log.

Runs against the real service when LINGODOC_API_KEY and LINGODOC_BASE_URL are set, and
otherwise against the local emulator, in-process. Needs ``pip install fastapi uvicorn``.

    python examples/web_service.py  # serves on a free port, asks itself twice, stops
    uvicorn --app-dir examples web_service:app --port 8080  # serves until Ctrl-C
    curl --json '{"text": "Hello world", "source": "en", "target": "de"}' localhost:8080/translate
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Annotated

import anyio
import httpx
import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

import lingodoc

logger = logging.getLogger(__name__)
# The longest a caller waits for a translation: the SDK's retries, and its wait for a rate
# limit that resets within a minute, included.
TIME_LIMIT = 20.0


# --8<-- [start:lifespan]
def connect() -> lingodoc.AsyncClient:
    if os.environ.get("LINGODOC_API_KEY") and os.environ.get("LINGODOC_BASE_URL"):
        print(f"Using the service at {os.environ['LINGODOC_BASE_URL']}")
        return lingodoc.AsyncClient()  # reads the two variables
    from lingodoc.emulator import Emulator

    print("LINGODOC_API_KEY / LINGODOC_BASE_URL not set: using the emulator, in-process")
    return Emulator().async_client()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncGenerator[None, None]:
    async with connect() as client:  # closed at shutdown
        app.state.lingodoc = client
        yield


app = FastAPI(title="Translator", lifespan=lifespan)


def get_translator(request: Request) -> lingodoc.AsyncClient:
    """The shared client (a test puts its own in: ``app.dependency_overrides``)."""
    client: lingodoc.AsyncClient = request.app.state.lingodoc
    return client


# --8<-- [end:lifespan]


class TranslateRequest(BaseModel):
    text: str
    source: str
    target: str


class TranslateResponse(BaseModel):
    translation: str


# --8<-- [start:endpoint]
@app.post("/translate")
async def translate(
    body: TranslateRequest, client: Annotated[lingodoc.AsyncClient, Depends(get_translator)]
) -> TranslateResponse:
    with anyio.fail_after(TIME_LIMIT):  # past it, the call is cancelled: TimeoutError
        result = await client.translate(
            body.text, source_language=body.source, target_language=body.target
        )
    return TranslateResponse(translation=result.translated_text)


# --8<-- [end:endpoint]


# --8<-- [start:errors]
@app.exception_handler(lingodoc.APIError)
@app.exception_handler(lingodoc.APIConnectionError)
@app.exception_handler(TimeoutError)
async def lingodoc_error(request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, (lingodoc.InvalidLanguage, lingodoc.TextTooLong)):
        return JSONResponse({"detail": error.message}, status_code=422)
    # Not the caller's doing: what failed, and the request id to quote to lingodoc's
    # support, go to our log; the answer says only what the caller can act on.
    logger.warning("translation failed: %r", error)
    if isinstance(error, lingodoc.RateLimited):
        # The SDK has already waited out a short limit; this one is further off.
        retry_after = str(math.ceil(error.retry_after or 60))
        detail = {"detail": "too busy, try again later"}
        return JSONResponse(detail, status_code=503, headers={"Retry-After": retry_after})
    if isinstance(error, lingodoc.Unauthorized):  # our API key, not the caller's
        return JSONResponse({"detail": "the service is misconfigured"}, status_code=500)
    if isinstance(error, (lingodoc.APITimeoutError, TimeoutError)):
        return JSONResponse({"detail": "the translation service timed out"}, status_code=504)
    return JSONResponse({"detail": "the translation service failed"}, status_code=502)


# --8<-- [end:errors]


async def demo() -> None:
    """Serve the app on a free loopback port, send it two requests, print the answers, stop."""
    # Listening before uvicorn starts: the requests wait in its backlog until the app is up.
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/translate"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))  # no log unless wrong
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    async with httpx.AsyncClient(timeout=30) as http:  # the first waits for the startup
        for target in ("de", "xx"):
            body = {"text": "Hello world", "source": "en", "target": target}
            response = await http.post(url, json=body)
            print(f"POST {url} {json.dumps(body)}\n  -> {response.status_code} {response.text}")
    server.should_exit = True
    await serving
    print("Stopped.")


if __name__ == "__main__":
    asyncio.run(demo())
