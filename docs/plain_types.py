"""A griffe extension: the API reference shows the types a user passes and gets.

mkdocstrings shows annotations as the source writes them, and some are written for the
type checkers and pydantic rather than for a reader:

* a generic base's type variable: ``BaseClient.__init__`` takes ``http_client:
  HttpClientT | None``, which is ``httpx.Client | None`` on ``Client`` and
  ``httpx.AsyncClient | None`` on ``AsyncClient``. Each client gets its own copy of what
  it inherits, with the variable replaced by the base's argument;
* validation detail: ``StrictStr`` and the ``Annotated[...]`` aliases of lingodoc's models
  (``Id``, ``State``...) are shown as the type they hold (``str``, ``TranslationState |
  str``);
* a base class that is not public (``_Result``, ``BaseClient``): not shown under "Bases:".

Then it checks what it leaves: a public signature that still names a type variable or a
constant as a default is a warning, which fails ``mkdocs build --strict``. mkdocs.yml loads
this file (mkdocs itself skips it: ``exclude_docs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import griffe

logger = griffe.get_logger("plain_types")

# pydantic's strict types, and the type each holds.
STRICT = {
    "pydantic.StrictStr": "str",
    "pydantic.StrictInt": "int",
    "pydantic.StrictFloat": "float",
    "pydantic.StrictBool": "bool",
    "pydantic.StrictBytes": "bytes",
}
PUBLIC_MODULES = ("lingodoc", "lingodoc.emulator", "lingodoc.testing")

Rewrite = Callable[[Any], Any]


def is_private(path: str) -> bool:
    """Whether a dotted path goes through a private name."""
    return any(part.startswith("_") for part in path.split("."))


def target(pkg: griffe.Module, path: str) -> griffe.Object | griffe.Alias | None:
    """The object of the package at ``path``, or ``None`` (another package's)."""
    if not path.startswith(pkg.path + "."):
        return None
    try:
        return pkg[path.removeprefix(pkg.path + ".")]
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def rewrite(expr: Any, name: Callable[[griffe.ExprName], Any]) -> Any:
    """Rebuild ``expr`` with each name replaced by ``name(it)``; ``Annotated[T, ...]`` as T."""
    if isinstance(expr, griffe.ExprName):
        return name(expr)
    if isinstance(expr, griffe.ExprSubscript):
        if isinstance(expr.left, griffe.ExprName) and expr.left.canonical_path in (
            "typing.Annotated",
            "typing_extensions.Annotated",
        ):
            held = expr.slice.elements[0] if isinstance(expr.slice, griffe.ExprTuple) else expr
            return rewrite(held, name)
        return dataclasses.replace(
            expr, left=rewrite(expr.left, name), slice=rewrite(expr.slice, name)
        )
    if isinstance(expr, griffe.ExprBinOp):
        return dataclasses.replace(
            expr, left=rewrite(expr.left, name), right=rewrite(expr.right, name)
        )
    if isinstance(expr, (griffe.ExprTuple, griffe.ExprList)):
        return dataclasses.replace(expr, elements=[rewrite(e, name) for e in expr.elements])
    return expr


def final(obj: Any) -> Any:
    """What an alias (an import) names, or the object itself."""
    return obj.final_target if obj.is_alias else obj


def is_type_variable(obj: griffe.Object | griffe.Alias | None) -> bool:
    """Whether ``obj`` is assigned ``TypeVar(...)``."""
    value = getattr(obj, "value", None) if isinstance(obj, griffe.Attribute) else None
    return isinstance(value, griffe.ExprCall) and str(value.function).endswith("TypeVar")


class PlainTypes(griffe.Extension):
    """Show plain types and public bases in the API reference; warn on what is left."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite lingodoc once it is loaded whole, then check its public names."""
        if pkg.path != "lingodoc":
            return
        classes = list(walk_classes(pkg))
        for cls in classes:
            substitute_type_variables(pkg, cls)
        for obj in walk(pkg):
            plain_annotations(pkg, obj)
        for cls in classes:
            cls.bases = [base for base in cls.bases if is_public_base(pkg, base)]
        for module in PUBLIC_MODULES:
            for obj in public_objects(pkg, module):
                check(pkg, obj)


def walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """Every object defined in ``obj``, itself included (aliases left out)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from walk(member)  # type: ignore[arg-type]


def walk_classes(pkg: griffe.Module) -> Iterator[griffe.Class]:
    """Every class defined in the package."""
    return (obj for obj in walk(pkg) if isinstance(obj, griffe.Class))


def substitute_type_variables(pkg: griffe.Module, cls: griffe.Class) -> None:
    """Give ``cls`` its own copy of each inherited method that names a base's type variable."""
    for base in cls.bases:
        if not (isinstance(base, griffe.ExprSubscript) and isinstance(base.left, griffe.ExprName)):
            continue
        parent = target(pkg, base.left.canonical_path)
        if not isinstance(parent, griffe.Class):
            continue
        variables = [
            element.canonical_path
            for generic in parent.bases
            if isinstance(generic, griffe.ExprSubscript) and str(generic.left) == "Generic"
            for element in (
                generic.slice.elements
                if isinstance(generic.slice, griffe.ExprTuple)
                else [generic.slice]
            )
            if isinstance(element, griffe.ExprName)
        ]
        arguments = (
            base.slice.elements if isinstance(base.slice, griffe.ExprTuple) else [base.slice]
        )
        mapping = dict(zip(variables, arguments, strict=False))

        def name(expr: griffe.ExprName, mapping: dict[str, Any] = mapping) -> Any:
            return mapping.get(expr.canonical_path, expr)

        for member_name, member in list(cls.inherited_members.items()):
            function = final(member)
            if isinstance(function, griffe.Function) and member_name not in cls.members:
                cls.set_member(member_name, copy_function(function, name))


def copy_function(function: griffe.Function, name: Rewrite) -> griffe.Function:
    """A copy of ``function`` whose annotations name what ``name`` gives."""
    copied = griffe.Function(
        function.name,
        lineno=function.lineno,
        endlineno=function.endlineno,
        parameters=griffe.Parameters(
            *(
                griffe.Parameter(
                    parameter.name,
                    annotation=rewrite(parameter.annotation, name),
                    kind=parameter.kind,
                    default=parameter.default,
                )
                for parameter in function.parameters
            )
        ),
        returns=rewrite(function.returns, name),
        decorators=function.decorators,
        docstring=function.docstring
        and griffe.Docstring(
            function.docstring.value,
            lineno=function.docstring.lineno,
            endlineno=function.docstring.endlineno,
            parser=function.docstring.parser,
            parser_options=function.docstring.parser_options,
        ),
    )
    copied.labels = set(function.labels)
    return copied


def plain_annotations(pkg: griffe.Module, obj: griffe.Object) -> None:
    """Replace strict types and lingodoc's ``Annotated`` aliases with the types they hold."""

    def name(expr: griffe.ExprName) -> Any:
        path = expr.canonical_path
        if path in STRICT:
            return griffe.ExprName(STRICT[path])
        alias = target(pkg, path)
        value = getattr(alias, "value", None) if isinstance(alias, griffe.Attribute) else None
        if isinstance(value, griffe.ExprSubscript) and str(value.left) == "Annotated":
            return rewrite(value, name)
        return expr

    if isinstance(obj, griffe.Attribute) and obj.annotation is not None:
        obj.annotation = rewrite(obj.annotation, name)
    elif isinstance(obj, griffe.Function):
        for parameter in obj.parameters:
            parameter.annotation = rewrite(parameter.annotation, name)
        obj.returns = rewrite(obj.returns, name)


def is_public_base(pkg: griffe.Module, base: Any) -> bool:
    """Whether ``base`` is another package's class or one lingodoc exports."""
    left = base.left if isinstance(base, griffe.ExprSubscript) else base
    path = getattr(left, "canonical_path", str(left))
    if not path.startswith("lingodoc.") or not is_private(path):
        return True
    exported = {
        final(member).path
        for module in PUBLIC_MODULES
        for member in public_objects(pkg, module)
        if not isinstance(final(member), griffe.Module)
    }
    return path in exported


def public_objects(pkg: griffe.Module, module: str) -> Iterator[Any]:
    """The names ``module`` exports (its ``__all__``), as members."""
    found = target(pkg, module) if module != pkg.path else pkg
    if found is None:
        return
    exports = found.exports or [name for name in found.members if not name.startswith("_")]
    for export in exports:
        name = export if isinstance(export, str) else str(export)
        member = found.members.get(name)
        if member is not None:
            yield member


def check(pkg: griffe.Module, obj: Any) -> None:
    """Warn on a type variable, or a named default, left in a public signature."""
    obj = final(obj)
    functions = [obj] if isinstance(obj, griffe.Function) else []
    if isinstance(obj, griffe.Class):
        functions = [
            final(member)
            for member_name, member in obj.all_members.items()
            if isinstance(final(member), griffe.Function)
            and (member_name == "__init__" or not member_name.startswith("_"))
        ]
    for function in functions:
        for parameter in function.parameters:
            if parameter.name in ("self", "cls"):
                continue
            for expr in names(parameter.annotation):
                if is_type_variable(target(pkg, expr.canonical_path)):
                    logger.warning(f"{obj.path}: {parameter.name} is shown as {expr.name}")
            if isinstance(parameter.default, (griffe.ExprName, griffe.ExprAttribute)) and str(
                parameter.default
            ) not in ("None", "True", "False"):
                logger.warning(
                    f"{obj.path}: {function.name}({parameter.name}={parameter.default}): "
                    "write the default as a literal, as the reference shows it"
                )


def names(expr: Any) -> list[griffe.ExprName]:
    """The names in an annotation."""
    if not isinstance(expr, griffe.Expr):
        return []
    return [name for name in expr.iterate(flat=True) if isinstance(name, griffe.ExprName)]
