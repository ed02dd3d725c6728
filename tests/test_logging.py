"""What the lingodoc logger says, and what it never says."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import httpx
import pytest
import respx

import lingodoc
from tests.conftest import API_KEY, call, envelope, failure

TRANSLATION = {"translated_text": "Hallo", "source_language": "en", "target_language": "de"}
SECRET_TEXT = "my confidential contract clause"


async def test_each_attempt_is_logged_with_method_path_status_and_attempt(
    client: lingodoc.Client, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    api.post("/translate").mock(
        side_effect=[
            httpx.Response(503, json=failure("BUSY")),
            httpx.Response(200, json=envelope(TRANSLATION)),
        ]
    )
    with caplog.at_level(logging.DEBUG, logger="lingodoc"):
        await call(client, "translate", SECRET_TEXT, source_language="en", target_language="de")
    messages = [r.getMessage() for r in caplog.records if r.name == "lingodoc"]
    assert any(
        m.startswith("POST /translate -> 503 in ") and m.endswith("(attempt 1)") for m in messages
    )
    assert any(
        m.startswith("POST /translate -> 200 in ") and m.endswith("(attempt 2)") for m in messages
    )
    assert any("retrying POST /translate in " in m and "ServerError 503" in m for m in messages)


async def test_logs_never_hold_the_key_or_the_texts(
    client: lingodoc.Client, api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    api.post("/translate").mock(
        side_effect=[
            httpx.ConnectError(f"refused for {API_KEY}"),
            httpx.Response(401, json=failure("UNAUTHORIZED", f"key {API_KEY} revoked")),
        ]
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(lingodoc.Unauthorized):
        await call(client, "translate", SECRET_TEXT, source_language="en", target_language="de")
    logged = caplog.text
    assert "POST /translate -> 401" in logged
    assert API_KEY not in logged
    assert SECRET_TEXT not in logged


async def test_connection_failures_are_logged_by_type(
    client_class: type[lingodoc.Client], api: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    api.get("/documents").mock(side_effect=httpx.ConnectError("nope"))
    client = client_class(API_KEY, base_url="https://api.lingodoc.test/v1", max_retries=0)
    with (
        caplog.at_level(logging.DEBUG, logger="lingodoc"),
        pytest.raises(lingodoc.APIConnectionError),
    ):
        await call(client, "list_documents")
    assert "GET /documents -> ConnectError in " in caplog.text


@pytest.mark.parametrize(("value", "level"), [("debug", "DEBUG"), ("INFO", "INFO")])
def test_lingodoc_log_turns_logging_on_for_scripts(value: str, level: str) -> None:
    script = textwrap.dedent(
        """
        import logging, lingodoc
        lingodoc.Client("ld_key_0000000000000000", base_url="https://x.test/v1")
        log = logging.getLogger("lingodoc")
        print(logging.getLevelName(log.level), len(log.handlers))
        log.info("visible")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"LINGODOC_LOG": value, "PATH": ""},
    )
    assert result.stdout.split() == [level, "1"]
    assert "lingodoc INFO visible" in result.stderr


def test_lingodoc_log_does_not_double_an_application_handler() -> None:
    script = textwrap.dedent(
        """
        import logging, lingodoc
        logging.basicConfig(level=logging.WARNING)
        lingodoc.Client("ld_key_0000000000000000", base_url="https://x.test/v1")
        log = logging.getLogger("lingodoc")
        print(logging.getLevelName(log.level), len(log.handlers))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True,
        env={"LINGODOC_LOG": "debug", "PATH": ""},
    )  # fmt: skip
    assert result.stdout.split() == ["DEBUG", "0"]


def test_without_lingodoc_log_nothing_is_configured() -> None:
    script = (
        "import logging, lingodoc; "
        "lingodoc.Client('ld_key_0000000000000000', base_url='https://x.test/v1'); "
        "log = logging.getLogger('lingodoc'); print(log.level, len(log.handlers))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env={"PATH": ""}
    )
    assert result.stdout.split() == ["0", "0"]
