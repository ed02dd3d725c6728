"""The public surface of API.md: names, import cost, typing marker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import lingodoc

API_NAMES = {
    "APIConnectionError", "APIError", "APITimeoutError", "AsyncCache", "AsyncClient",
    "BadRequest", "BatchTranslation", "BulkProgress", "Cache", "Client", "ConfigurationError",
    "DefaultAioHttpClient", "Document", "RedisCache", "SQLiteCache",
    "InvalidArgument", "InvalidArgumentType", "InvalidLanguage", "LingodocError", "NotFound",
    "PartialTranslations", "RateLimit", "RateLimited", "ServerError", "TextTooLong",
    "TextTranslation", "TranslationFailed", "TranslationJob", "TranslationState",
    "TranslationStatus", "Unauthorized", "UnexpectedResponse", "WaitTimeout", "__version__",
}  # fmt: skip


def test_all_is_sorted_and_lists_exactly_the_public_names() -> None:
    assert lingodoc.__all__ == sorted(lingodoc.__all__)
    assert set(lingodoc.__all__) == API_NAMES
    # "@py_builtins" and the like: pytest rewrites packages that ship a plugin.
    public = {name for name in vars(lingodoc) if not name.startswith(("_", "@"))}
    assert public - set(lingodoc.__all__) <= {"testing", "emulator", "cli"}


def test_exceptions_and_clients_present_themselves_as_lingodoc_names() -> None:
    for name in lingodoc.__all__:
        obj = getattr(lingodoc, name)
        if isinstance(obj, type):
            assert obj.__doc__, f"{name} has no docstring"
            if issubclass(obj, (lingodoc.LingodocError, lingodoc.Client, lingodoc.AsyncClient)):
                assert obj.__module__ == "lingodoc", name


def test_model_annotations_resolve() -> None:
    # Rewriting a model's __module__ would break this (and pydantic rebuilds).
    hints = typing.get_type_hints(lingodoc.TranslationStatus)
    assert {"status", "progress", "completed_at"} <= set(hints)


def test_version_is_a_release_string() -> None:
    major, minor, patch = lingodoc.__version__.split(".")
    assert all(part.isdigit() for part in (major, minor, patch))


LIGHT_AND_LAZY = """
import json, sys
import lingodoc
heavy = [m for m in ('lingodoc.emulator', 'lingodoc.cli', 'lingodoc.testing', 'http.server',
                     'argparse', 'pydantic.main', 'aiohttp', 'sqlite3', 'redis', 'httpcore',
                     'h11')
         if m in sys.modules]
import httpx
clients = [lingodoc.Client("k" * 20, base_url=url)
           for url in ("https://api.lingodoc.test/v1", "http://127.0.0.1:8787/v1")]
from lingodoc import _environment
contexts_shared = _environment.ssl_context(False) is _environment.ssl_context(False)
pydantic_after_clients = "pydantic.main" in sys.modules
data = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
answer = lambda request: httpx.Response(200, json={"success": True, "data": data},
                                        headers={"X-RateLimit-Limit": "9",
                                                 "X-RateLimit-Remaining": "8",
                                                 "X-RateLimit-Reset": "60"})
http = httpx.Client(transport=httpx.MockTransport(answer))
client = lingodoc.Client("k" * 20, base_url="https://api.lingodoc.test/v1", http_client=http)
result = client.translate("Hello", source_language="en", target_language="de")
from lingodoc import _models
import lingodoc.emulator.pytest_plugin, lingodoc.emulator
serving_imported = "http.server" in sys.modules  # only when serving
print(json.dumps({"heavy": heavy, "contexts shared": contexts_shared,
                  "emulator imports http.server": serving_imported,
                  "pydantic after clients": pydantic_after_clients,
                  "result": [type(result).__name__, result.translated_text,
                             result.rate_limit.remaining]}))
"""


def test_import_lingodoc_stays_light_and_clients_share_one_ssl_context() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("SSL_CERT")}
    result = subprocess.run(
        [sys.executable, "-c", LIGHT_AND_LAZY], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(result.stdout) == {
        "heavy": [],
        "contexts shared": True,  # httpx would build one per client (about 20 ms)
        "emulator imports http.server": False,
        "pydantic after clients": False,
        "result": ["TextTranslation", "Hallo", 8],
    }


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(lingodoc.__file__).parent / "py.typed").is_file()
