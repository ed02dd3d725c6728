"""Every public name is documented, in the Google style the API reference is generated from.

The API reference (docs/reference.md, rendered by mkdocstrings) shows the docstrings and
nothing else, so they must say everything a user needs:

* every name in ``lingodoc.__all__`` and in ``lingodoc.emulator.__all__``, every public
  method and property of their classes (also those inherited from lingodoc's own base
  classes), and the testing helpers (``lingodoc.testing``) has a docstring of its own (a
  constant or a type alias, the string literal right after its assignment, which is what
  the API reference shows);
* a function or method lists each of its parameters under ``Args:`` (a class, those of its
  constructor), says what it gives under ``Returns:`` (``Yields:`` for a generator), and
  says what it raises under ``Raises:``, naming real exception classes (of lingodoc, of
  the builtins, or dotted such as ``httpx.ReadTimeout``). Every client method sends a
  request or checks its arguments, so all of them raise; elsewhere a method that takes
  arguments raises unless it is listed in ``RAISES_NOTHING``;
* a class users construct documents its constructor's arguments; results list their
  fields, exceptions their attributes, and enums their members, under ``Attributes:``;
* docs/reference.md documents exactly these names: ``lingodoc.__all__``, the testing
  helpers, and ``lingodoc.emulator.__all__``;
* every docstring of the package is in the Markdown mkdocstrings renders: a cross-reference
  is ``[`Client.close()`][lingodoc.Client.close]`` (or plain code where the reference has
  no such target), a code example a fenced block. No Sphinx role (``:class:`Client```)
  or reST ``::`` block: the reference would show it as it is.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import importlib
import inspect
import itertools
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

import lingodoc
import lingodoc.emulator
import lingodoc.testing

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
PACKAGE = ROOT / "src" / "lingodoc"

PUBLIC = {f"lingodoc.{name}": getattr(lingodoc, name) for name in lingodoc.__all__}
del PUBLIC["lingodoc.__version__"]
EMULATOR = {
    f"lingodoc.emulator.{name}": getattr(lingodoc.emulator, name)
    for name in lingodoc.emulator.__all__
}
# Documented in the API reference too, beyond lingodoc.__all__.
EXTRAS: dict[str, Any] = {
    "lingodoc.testing.FakeClock": lingodoc.testing.FakeClock,
    "lingodoc.testing.fake_clock": lingodoc.testing.fake_clock,
    **EMULATOR,
}
CLIENTS = (lingodoc.Client, lingodoc.AsyncClient)
# Methods that take arguments but raise nothing of their own, and why.
RAISES_NOTHING = {
    "lingodoc.testing.FakeClock.sleep": "records any number of seconds",
    "lingodoc.testing.FakeClock.async_sleep": "records any number of seconds",
    "lingodoc.testing.FakeClock.wait": "records any number of seconds, for any event",
    "lingodoc.testing.fake_clock": "installs the clock it is given",
    "lingodoc.emulator.Clock.sleep": "a protocol: what an implementation must accept",
    "lingodoc.emulator.Clock.async_sleep": "a protocol: what an implementation must accept",
    "lingodoc.emulator.Emulator.fail_next_job": "queues any message, for any document",
    "lingodoc.emulator.Emulator.handle": "answers every request, an emulator bug with a 500",
    "lingodoc.emulator.translate_text": "any text has a translation, in any language pair",
}
# Classes users do not construct, and why; they list their Attributes: instead.
NOT_CONSTRUCTED = {
    "lingodoc.AsyncCache": "a protocol, for users' own caches",
    "lingodoc.BulkProgress": "passed to translate_many's on_progress",
    "lingodoc.Cache": "a protocol, for users' own caches",
    "lingodoc.PartialTranslations": "carried by translate_many's errors",
    "lingodoc.emulator.Clock": "a protocol, for users' own clocks",
    "lingodoc.emulator.EmulatorServer": "yielded by Emulator.serve()",
    "lingodoc.emulator.Reply": "returned by Emulator.handle()",
    "lingodoc.emulator.RequestRecord": "listed by Emulator.requests",
}


def is_data(obj: Any) -> bool:
    """Whether ``obj`` is a constant or a type alias rather than a class or a function."""
    return not (isinstance(obj, (type, property)) or inspect.isroutine(obj))


def attribute_doc(path: str) -> str:
    """The docstring of the constant or type alias ``path``: the string after its assignment.

    Python keeps no such docstring at run time (``PLAN_LIMITS.__doc__`` is ``dict``'s), so
    it is read from the source of the module that assigns the name, as mkdocstrings does.
    """
    package, name = path.rsplit(".", 1)
    modules = [m for m in list(sys.modules.values()) if m and m.__name__.startswith(package)]
    for module in modules:
        if getattr(module, name, None) is not getattr(importlib.import_module(package), name):
            continue
        body = ast.parse(inspect.getsource(module)).body
        for statement, following in itertools.pairwise(body):
            targets = (
                statement.targets
                if isinstance(statement, ast.Assign)
                else [statement.target]
                if isinstance(statement, ast.AnnAssign)
                else []
            )
            if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
                continue
            value = following.value if isinstance(following, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return inspect.cleandoc(value.value)
            return ""
    raise AssertionError(f"no module of {package} assigns {name}")


def own_doc(obj: Any) -> str:
    """The object's own docstring, not one inherited from a base class."""
    target = obj.fget if isinstance(obj, property) else obj
    doc = target.__dict__.get("__doc__") if isinstance(target, type) else target.__doc__
    return inspect.cleandoc(doc) if doc else ""


def sections(doc: str) -> dict[str, list[str]]:
    """Return the Google-style sections of ``doc`` and the names they list."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    entry_indent: int | None = None
    for line in doc.splitlines():
        heading = re.fullmatch(r"([A-Z][a-z]+):", line)
        if heading:
            current = found.setdefault(heading.group(1), [])
            entry_indent = None
            continue
        if current is None or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            current = None
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent == entry_indent:
            current.append(re.split(r"[\s(:]", line.strip(), maxsplit=1)[0])
    return found


def members(cls: type) -> Iterator[tuple[str, Any]]:
    """The public methods and properties of ``cls``, own and from lingodoc base classes."""
    seen: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("lingodoc"):
            continue
        for name, value in vars(base).items():
            if name.startswith("_") or name in seen:
                continue
            function = value.fget if isinstance(value, property) else value
            # Defined by lingodoc (pydantic adds functions of its own to the models).
            if inspect.isfunction(function) and function.__module__.startswith("lingodoc"):
                seen.add(name)
                yield name, value


def documented() -> Iterator[tuple[str, Any]]:
    """Every documented name and member, with the object."""
    for path, obj in {**PUBLIC, **EXTRAS}.items():
        yield path, obj
        if isinstance(obj, type):
            for name, member in members(obj):
                yield f"{path}.{name}", member


ALL = dict(documented())


def parameters(func: Callable[..., Any]) -> list[str]:
    func = inspect.unwrap(func)
    names = list(inspect.signature(func).parameters)
    return [name for name in names if name not in ("self", "cls")]


def star_name(func: Callable[..., Any], name: str) -> str:
    kind = inspect.signature(inspect.unwrap(func)).parameters[name].kind
    return {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(
        kind, ""
    ) + name


def owner(path: str) -> Any:
    return ALL.get(path.rsplit(".", 1)[0])


@pytest.mark.parametrize("path", sorted(ALL))
def test_has_a_docstring(path: str) -> None:
    doc = attribute_doc(path) if is_data(ALL[path]) else own_doc(ALL[path])
    assert doc, f"{path} has no docstring of its own"


FUNCTIONS = sorted(path for path in ALL if inspect.isfunction(ALL[path]))


@pytest.mark.parametrize("path", FUNCTIONS)
def test_functions_list_their_arguments(path: str) -> None:
    func = ALL[path]
    expected = [star_name(func, name) for name in parameters(func)]
    listed = sections(own_doc(func)).get("Args", [])
    assert listed == expected, f"{path}: Args: lists {listed}, the signature has {expected}"


@pytest.mark.parametrize("path", FUNCTIONS)
def test_functions_say_what_they_return(path: str) -> None:
    func = inspect.unwrap(ALL[path])
    annotation = str(inspect.signature(func).return_annotation)
    found = sections(own_doc(ALL[path]))
    if re.match(r"(Async)?(Iterator|Generator)\[", annotation):
        assert "Yields" in found, f"{path} yields; it needs a Yields: section"
    elif annotation not in ("None", str(inspect.Signature.empty)):
        assert "Returns" in found, f"{path} returns {annotation}; it needs a Returns: section"


@pytest.mark.parametrize("path", FUNCTIONS)
def test_functions_say_what_they_raise(path: str) -> None:
    func = ALL[path]
    raised = sections(own_doc(func)).get("Raises", [])
    sends = owner(path) in CLIENTS and func.__name__ not in ("close", "aclose")
    if path in RAISES_NOTHING:
        assert not raised, f"{path} is listed in RAISES_NOTHING but has a Raises: section"
    elif sends or parameters(func):
        assert raised, f"{path} can raise; it needs a Raises: section"
    for name in raised:
        error = exception_class(name)
        assert isinstance(error, type), f"{path}: Raises: names {name!r}, which is no class"
        assert issubclass(error, Exception), f"{path}: Raises: names {name!r}"


def written_defaults(func: Callable[..., Any]) -> dict[str, ast.expr]:
    """The defaults of ``func``'s parameters as its source writes them."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(func))))
    definition = tree.body[0]
    assert isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef))
    arguments = definition.args
    positional = [*arguments.posonlyargs, *arguments.args]
    with_defaults = positional[len(positional) - len(arguments.defaults) :]
    pairs = zip(with_defaults, arguments.defaults, strict=True)
    keyword = zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    return {arg.arg: default for arg, default in [*pairs, *keyword] if default is not None}


def written(path: str) -> Callable[..., Any] | None:
    """The function, or the constructor of the class, at ``path``, if lingodoc writes it."""
    obj = ALL[path]
    func = obj if inspect.isfunction(obj) else getattr(obj, "__init__", None)
    module = getattr(func, "__module__", None) or ""
    # A dataclass's or a NamedTuple's constructor is generated: no source to read.
    generated = dataclasses.is_dataclass(obj) or hasattr(obj, "_fields")
    written_here = inspect.isfunction(func) and module.startswith("lingodoc")
    return func if written_here and not generated else None


SIGNATURES = [path for path in sorted(ALL) if written(path) is not None]


@pytest.mark.parametrize("path", SIGNATURES)
def test_signatures_write_their_defaults_as_values(path: str) -> None:
    # The reference shows a default as the source writes it: `max_retries: int = 2`, which
    # a reader can use, not the name of a constant (`= DEFAULT_MAX_RETRIES`).
    func = written(path)
    assert func is not None
    for name, default in written_defaults(func).items():
        assert isinstance(default, ast.Constant) or (
            isinstance(default, ast.UnaryOp) and isinstance(default.operand, ast.Constant)
        ), f"{path}: {name}={ast.unparse(default)}; write the value"


def test_the_written_defaults_are_the_ones_shared_with_the_cli() -> None:
    # Against the command line's own defaults, not copies of them: neither can drift.
    from lingodoc.cli._parser import build_parser

    parser = build_parser()
    batch = parser.parse_args(["batch", "-", "--to", "de"])
    shown = " ".join(parser.format_help().split())  # --max-retries's default, as --help says
    for client in CLIENTS:
        parameters = inspect.signature(client.translate_many).parameters
        assert parameters["batch_size"].default == batch.batch_size
        assert parameters["max_concurrency"].default == batch.concurrency
        retries = inspect.signature(client).parameters["max_retries"].default
        assert f"--max-retries N retries of a failure (default: {retries})" in shown
    written = written_defaults(lingodoc.Client.translate_many)
    assert written["max_concurrency"].value == batch.concurrency
    assert written["batch_size"].value == batch.batch_size


def exception_class(name: str) -> Any:
    """The class a Raises: entry names: ``NotFound``, ``ValueError``, ``httpx.ReadTimeout``."""
    if "." in name:
        module, _, attribute = name.rpartition(".")
        try:
            return getattr(importlib.import_module(module), attribute, None)
        except ImportError:
            return None
    return getattr(lingodoc, name, getattr(builtins, name, None))


CLASSES = sorted(path for path in ALL if isinstance(ALL[path], type))


@pytest.mark.parametrize("path", CLASSES)
def test_classes_document_their_constructor(path: str) -> None:
    cls = ALL[path]
    if issubclass(cls, (Exception, pydantic.BaseModel, enum.Enum)) or path in NOT_CONSTRUCTED:
        return  # built by the SDK, not by users: they document their Attributes instead
    expected = [star_name(cls.__init__, name) for name in parameters(cls.__init__)]
    listed = sections(own_doc(cls)).get("Args", []) or sections(own_doc(cls.__init__)).get(
        "Args", []
    )
    assert listed == expected, f"{path}: Args: lists {listed}, the constructor has {expected}"


def instance_attributes(cls: type) -> list[str]:
    """The public attributes an exception's own ``__init__`` sets."""
    init = cls.__dict__.get("__init__")
    if init is None:
        return []
    return re.findall(r"self\.([a-z]\w*) =", inspect.getsource(init))


@pytest.mark.parametrize("path", CLASSES)
def test_results_exceptions_and_enums_list_their_attributes(path: str) -> None:
    cls = ALL[path]
    if issubclass(cls, pydantic.BaseModel):
        expected = set(cls.model_fields)
    elif issubclass(cls, enum.Enum):
        expected = set(cls.__members__)
    elif issubclass(cls, Exception):
        expected = set(instance_attributes(cls))
    elif dataclasses.is_dataclass(cls):
        expected = {field.name for field in dataclasses.fields(cls)}
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):  # a NamedTuple
        expected = set(cls._fields)
    else:
        return
    listed = set(sections(own_doc(cls)).get("Attributes", []))
    assert expected <= listed, f"{path}: Attributes: lacks {sorted(expected - listed)}"


def reference_directives() -> list[str]:
    """The names docs/reference.md documents, in its ``::: name`` lines."""
    return re.findall(r"^::: *([\w.]+)", REFERENCE.read_text(encoding="utf-8"), re.M)


def test_the_api_reference_documents_exactly_the_public_names() -> None:
    directives = reference_directives()
    assert len(directives) == len(set(directives)), "a name is documented twice"
    assert set(directives) == set(PUBLIC) | set(EXTRAS)


def test_the_api_reference_documents_exactly_the_emulators_public_names() -> None:
    documented = {name for name in reference_directives() if name.startswith("lingodoc.emulator.")}
    public = {f"lingodoc.emulator.{name}" for name in lingodoc.emulator.__all__}
    assert documented - public == set(), "the reference documents names not in __all__"
    assert public - documented == set(), "names in lingodoc.emulator.__all__ lack a reference"
    # What the contract (API.md) names users need: the emulator, serve()'s object with
    # .base_url, the fault kinds.
    assert {"Emulator", "EmulatorServer", "FaultKind"} <= set(lingodoc.emulator.__all__)


def test_data_docstrings_are_read_from_the_source() -> None:
    assert attribute_doc("lingodoc.emulator.MAX_BATCH_ITEMS").startswith("Most texts")
    assert is_data(EMULATOR["lingodoc.emulator.PLAN_LIMITS"])
    assert is_data(EMULATOR["lingodoc.emulator.FaultKind"])
    assert not is_data(EMULATOR["lingodoc.emulator.translate_text"])


def test_the_section_reader() -> None:
    doc = """Do a thing.

    Args:
        text: The text,
            on two lines.
        style (str): A style.
        **kwargs: More.

    Returns:
        Something.

    Raises:
        ValueError: If it is wrong.
    """
    assert sections(inspect.cleandoc(doc)) == {
        "Args": ["text", "style", "**kwargs"],
        "Returns": ["Something."],
        "Raises": ["ValueError"],
    }


# reST markup that Markdown shows as it is: a Sphinx role, and "text::" before a literal block.
SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|exc|mod|obj|const):`")
REST_LITERAL_BLOCK = re.compile(r"::[ \t]*$", re.M)


def module_docstrings(path: Path) -> Iterator[tuple[int, str]]:
    """Every docstring of a module, with its line: of the module, of its classes and
    functions, and the string after an assignment (an attribute's, for the reference)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        blocks = [getattr(node, field, None) for field in ("body", "orelse", "finalbody")]
        for statement in [s for block in blocks if isinstance(block, list) for s in block]:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                yield statement.lineno, statement.value.value


def test_docstrings_are_markdown_not_rest() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, doc in module_docstrings(path)
        for pattern, what in (
            (SPHINX_ROLE, "a Sphinx role: write [`name`][lingodoc.Name], or `name`"),
            (REST_LITERAL_BLOCK, "a reST '::' block: write a fenced ```python block"),
        )
        if pattern.search(doc)
    ]
    assert not found, "\n".join(found)


def test_the_markdown_check_sees_rest() -> None:
    assert SPHINX_ROLE.search("Call :meth:`close` first.")
    assert SPHINX_ROLE.search("A :py:class:`~lingodoc.Client`.")
    assert not SPHINX_ROLE.search("Call [`close()`][lingodoc.Client.close] first.")
    assert REST_LITERAL_BLOCK.search("Use it so::\n\n    client.close()\n")
    assert not REST_LITERAL_BLOCK.search("Use it so:\n\n```python\nd[::2]\n```\n")
