"""The blocking client and transport are generated from the async ones (scripts/unasync.py).

CI runs `python scripts/unasync.py --check`, which compares the formatted text; these
tests hold the same promise without ruff (the test tools do not include it), by
comparing syntax trees, and pin down the rules of the generator.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

import lingodoc

ROOT = Path(__file__).resolve().parents[1]


def load_unasync() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "scripts" / "unasync.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


unasync = load_unasync()


@pytest.mark.parametrize(
    ("source", "target", "phrases"), unasync.MODULES, ids=lambda v: getattr(v, "name", "")
)
def test_each_generated_sync_module_is_current(
    source: Path, target: Path, phrases: list[tuple[str, str]]
) -> None:
    generated = unasync.unasync(source.read_text(encoding="utf-8"), phrases)
    committed = target.read_text(encoding="utf-8")
    # ruff changes layout and the order of imported names only: equal trees, names
    # sorted, mean the file in the tree is current.
    assert tree_of(generated) == tree_of(committed), (
        f"{target.name} is stale: run `python scripts/unasync.py`"
    )


def tree_of(code: str) -> str:
    """The syntax tree of ``code``, its imports sorted (a renamed module sorts elsewhere)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            node.names.sort(key=lambda alias: alias.name)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in tree.body if node not in imports]
    tree.body = sorted(imports, key=ast.dump) + rest
    return ast.dump(tree)


def test_async_code_becomes_blocking_code() -> None:
    source = (
        "async def fetch(self) -> AsyncClient:\n"
        "    async with self.lock:\n"
        "        async for chunk in response.aiter_raw():\n"
        "            await _clock.async_sleep(1)\n"
        "    await self.aclose()\n"
        "    await _bulk.async_run_workers(self._worker, bulk)\n"
    )
    assert unasync.unasync(source, []) == (
        "def fetch(self) -> Client:\n"
        "    with self.lock:\n"
        "        for chunk in response.iter_raw():\n"
        "            _clock.sleep(1)\n"
        "    self.close()\n"
        "    _bulk.run_workers(self._worker, bulk)\n"
    )


def test_names_are_replaced_only_as_whole_words() -> None:
    assert unasync.unasync("MyAsyncClientFactory, aclosed, awaited\n", []) == (
        "MyAsyncClientFactory, aclosed, awaited\n"
    )


def test_a_docstring_phrase_that_no_longer_matches_stops_the_generator() -> None:
    with pytest.raises(SystemExit, match="no longer has the phrase"):
        unasync.unasync("async def f(): ...\n", [("a phrase the source lacks", "anything")])


def blocking_name(name: str) -> str:
    return {"__aenter__": "__enter__", "__aexit__": "__exit__", "aclose": "close"}.get(name, name)


def awaits(method: object) -> bool:
    """Whether ``method`` is awaited, or entered with ``async with`` (an async generator's)."""
    unwrapped = inspect.unwrap(method)  # type: ignore[arg-type]
    return inspect.iscoroutinefunction(unwrapped) or inspect.isasyncgenfunction(unwrapped)


def test_both_clients_have_the_same_methods_and_signatures() -> None:
    async_methods = {
        blocking_name(name): member
        for name, member in vars(lingodoc.AsyncClient).items()
        if inspect.isfunction(member)
    }
    sync_methods = {
        name: member for name, member in vars(lingodoc.Client).items() if inspect.isfunction(member)
    }
    assert set(async_methods) == set(sync_methods)
    for name, member in sync_methods.items():
        assert awaits(async_methods[name]), name
        assert not awaits(member), name
        assert list(inspect.signature(member).parameters) == list(
            inspect.signature(async_methods[name]).parameters
        ), name
