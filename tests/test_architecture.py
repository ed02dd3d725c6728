"""The rooms of the package and which may import which (docs/architecture.md draws them).

Read from the source with `ast`, so a rule is checked whatever is installed. Imports
under `if TYPE_CHECKING:` are for annotations only and are left out, except where a rule
says otherwise.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "lingodoc"

CLIENTS = {
    "lingodoc._async_client", "lingodoc._sync_client", "lingodoc._async_send", "lingodoc._sync_send"
}  # fmt: skip
# The rooms built on top of the core: the core never reaches up into them.
ROOMS_ABOVE_CORE = ("lingodoc.cli", "lingodoc.emulator", "lingodoc.testing")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, *, with_type_checking: bool = False) -> set[str]:
    """The lingodoc modules that a file imports (``from lingodoc import x`` counts as x)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and "TYPE_CHECKING" in ast.unparse(child.test)
                and not with_type_checking
            ):
                continue
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("lingodoc"):
                assert child.module is not None
                if child.module in ("lingodoc", "lingodoc.emulator", "lingodoc.cli"):
                    for alias in child.names:
                        candidate = f"{child.module}.{alias.name}"
                        is_module = (SRC / Path(*candidate.split("."))).with_suffix(".py").exists()
                        found.add(candidate if is_module else child.module)
                else:
                    found.add(child.module)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.startswith("lingodoc"))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
IMPORTS = {name: imported(path) for name, path in MODULES.items()}
CORE = {
    name
    for name in MODULES
    if name.startswith("lingodoc._") and name not in CLIENTS and name != "lingodoc.__main__"
}


def test_the_import_graph_was_read() -> None:
    assert "lingodoc._base_client" in IMPORTS["lingodoc._async_send"]
    assert len(CORE) >= 15


@pytest.mark.parametrize("name", sorted(CORE))
def test_the_core_never_imports_the_clients_or_the_rooms_above_it(name: str) -> None:
    forbidden = {
        module
        for module in imported(MODULES[name], with_type_checking=True)
        if module in CLIENTS or module.startswith(ROOMS_ABOVE_CORE)
    }
    assert not forbidden, f"{name} imports {sorted(forbidden)}"


def test_only_the_package_imports_the_generated_sync_client() -> None:
    importers = {name for name, found in IMPORTS.items() if "lingodoc._sync_client" in found}
    assert importers == {"lingodoc"}
    importers = {name for name, found in IMPORTS.items() if "lingodoc._sync_send" in found}
    assert importers == {"lingodoc._sync_client"}


def test_the_async_and_sync_clients_import_the_same_modules() -> None:
    twins = {"lingodoc._async_send": "lingodoc._sync_send"}
    for name in ("client", "send"):
        async_imports = {twins.get(m, m) for m in IMPORTS[f"lingodoc._async_{name}"]}
        assert async_imports == IMPORTS[f"lingodoc._sync_{name}"]


def test_the_emulator_server_and_transport_do_not_import_the_emulator_front() -> None:
    for name in ("lingodoc.emulator._server", "lingodoc.emulator._transport"):
        found = imported(MODULES[name], with_type_checking=True)
        assert "lingodoc.emulator._emulator" not in found, name
        assert "lingodoc.emulator" not in found, name


# Besides the public names, the rooms above the core may import these core modules only:
# the numbers they share with the SDK, its clock (which fake_clock swaps), its argument
# checks (its rules, not copies of them) and Ctrl-C held back. docs/architecture.md says so.
CORE_FOR_ROOMS = {
    "lingodoc._clock",
    "lingodoc._constants",
    "lingodoc._signals",
    "lingodoc._validation",
}


def is_private(module: str) -> bool:
    return any(part.startswith("_") and not part.endswith("__") for part in module.split("."))


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith(ROOMS_ABOVE_CORE)))
def test_the_rooms_above_the_core_import_public_names_and_only_the_listed_core_modules(
    name: str,
) -> None:
    # Type-only imports count: an annotation naming a private class breaks when it moves.
    room = next(room for room in ROOMS_ABOVE_CORE if name.startswith(room))
    private = {
        module
        for module in imported(MODULES[name], with_type_checking=True)
        if is_private(module) and not module.startswith(f"{room}.")
    }
    assert private <= CORE_FOR_ROOMS, f"{name} imports {sorted(private - CORE_FOR_ROOMS)}"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle among lingodoc's own modules (package __init__ files aside)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    return found


def test_no_module_imports_itself_back_through_others() -> None:
    # Package __init__ files re-export their modules: an import of the package is
    # an import of its public face, which is allowed from below.
    packages = {"lingodoc", "lingodoc.cli", "lingodoc.emulator"}
    graph = {
        name: (found | imported(MODULES[name], with_type_checking=True)) - packages
        for name, found in IMPORTS.items()
        if name not in packages
    }
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


ACCESSORS = {"getattr", "setattr", "hasattr", "delattr"}


def test_no_private_name_is_reached_by_a_string() -> None:
    # CI's pyright (scripts/pyright-private-names.json) refuses private names used in src/;
    # it cannot see one given to getattr as a string.
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ACCESSORS
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and node.args[1].value.startswith("_")
                and not node.args[1].value.endswith("__")
                and ast.unparse(node.args[0]) not in ("self", "cls")
            ):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
