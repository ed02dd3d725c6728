"""The public surface of API.md: names, import cost, typing marker."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import lingodoc

API_NAMES = {
    "APIConnectionError", "APIError", "APITimeoutError", "AsyncClient", "BadRequest",
    "BatchTranslation", "BulkProgress", "Client", "ConfigurationError", "Document",
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


def test_import_lingodoc_stays_light() -> None:
    code = (
        "import sys, lingodoc; "
        "heavy = [m for m in ('lingodoc.emulator', 'lingodoc.cli', 'lingodoc.testing', "
        "'http.server', 'argparse') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(lingodoc.__file__).parent / "py.typed").is_file()
