"""A griffe extension: the API reference shows the types a user passes and gets.

mkdocstrings shows annotations as the source writes them, and some are written
for type checkers and pydantic rather than for a reader:

* a generic base's type variable: ``BaseClient.__init__`` takes
  ``http_client: HttpClientT | None``, which is ``httpx.Client | None`` on
  ``Client``. Each class gets its own copy of the methods it inherits, with
  the variable replaced by its base's argument;
* validation detail: ``StrictStr`` and the ``Annotated[...]`` aliases of the
  models (``Id``, ``State``...) are shown as the types they hold (``str``,
  ``TranslationState | str``);
* a base class that lingodoc does not export (``_Result``, ``BaseClient``) is
  left out of "Bases:";
* a public constant assigned another (``MAX_BATCH_ITEMS =
  _constants.MAX_BATCH_ITEMS``) shows that one's value (``100``).

Then it checks the public names: a signature that still names a type variable,
or a constant as a default, is a warning, which fails ``mkdocs build --strict``.
mkdocs.yml loads this file, and leaves it out of the site (``exclude_docs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import griffe

logger = griffe.get_logger("plain_types")

# pydantic's strict types, and the type each holds.
STRICT = {
    f"pydantic.Strict{kind.capitalize()}": kind
    for kind in ("str", "int", "float", "bool", "bytes")
}
ANNOTATED = ("typing.Annotated", "typing_extensions.Annotated")
PUBLIC_MODULES = ("lingodoc", "lingodoc.emulator", "lingodoc.testing")

Rename = Callable[[griffe.ExprName], Any]


class PlainTypes(griffe.Extension):
    """Plain types and public bases in the reference; warn on what is left."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite lingodoc once it is loaded whole, then check it."""
        if pkg.path != "lingodoc":
            return
        classes = [obj for obj in walk(pkg) if isinstance(obj, griffe.Class)]
        for cls in classes:
            substitute_type_variables(pkg, cls)
        for obj in walk(pkg):
            plain_annotations(pkg, obj)
        exported = {final(obj).path for obj in public_objects(pkg)}
        for cls in classes:
            cls.bases = [base for base in cls.bases if is_shown(base, exported)]
        for obj in public_objects(pkg):
            plain_value(pkg, final(obj))
            check(pkg, obj)


def walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    """Every object defined in ``obj``, itself included (not its imports)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from walk(member)  # type: ignore[arg-type]


def final(obj: Any) -> Any:
    """What an alias (an import) names, or the object itself."""
    return obj.final_target if obj.is_alias else obj


def target(pkg: griffe.Module, path: str) -> Any:
    """The object of the package at ``path``; ``None`` for another's."""
    if not path.startswith(pkg.path + "."):
        return None
    try:
        return pkg[path.removeprefix(pkg.path + ".")]
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def elements(expr: Any) -> list[Any]:
    """The arguments of a subscript: ``X[A, B]`` gives ``[A, B]``."""
    return expr.elements if isinstance(expr, griffe.ExprTuple) else [expr]


def rewrite(expr: Any, rename: Rename) -> Any:
    """``expr``, its names renamed and each ``Annotated[T, ...]`` as ``T``."""
    if isinstance(expr, griffe.ExprName):
        return rename(expr)
    if isinstance(expr, griffe.ExprSubscript):
        left = getattr(expr.left, "canonical_path", "")
        if left in ANNOTATED:
            return rewrite(elements(expr.slice)[0], rename)
        return dataclasses.replace(
            expr,
            left=rewrite(expr.left, rename),
            slice=rewrite(expr.slice, rename),
        )
    if isinstance(expr, griffe.ExprBinOp):
        return dataclasses.replace(
            expr,
            left=rewrite(expr.left, rename),
            right=rewrite(expr.right, rename),
        )
    if isinstance(expr, (griffe.ExprTuple, griffe.ExprList)):
        new = [rewrite(element, rename) for element in expr.elements]
        return dataclasses.replace(expr, elements=new)
    return expr


def substitute_type_variables(pkg: griffe.Module, cls: griffe.Class) -> None:
    """Copy the methods ``cls`` inherits, its bases' type variables replaced.

    ``class Client(BaseClient[httpx.Client])``: ``HttpClientT`` becomes
    ``httpx.Client`` in the methods ``Client`` has from ``BaseClient``.
    """
    for base in cls.bases:
        if not isinstance(base, griffe.ExprSubscript):
            continue
        parent = target(pkg, getattr(base.left, "canonical_path", ""))
        if not isinstance(parent, griffe.Class):
            continue
        variables = [
            variable.canonical_path
            for generic in parent.bases
            if isinstance(generic, griffe.ExprSubscript)
            and str(generic.left) == "Generic"
            for variable in elements(generic.slice)
        ]
        given = dict(zip(variables, elements(base.slice), strict=False))

        def rename(expr: griffe.ExprName, given: dict[str, Any] = given) -> Any:
            return given.get(expr.canonical_path, expr)

        for name, member in list(cls.inherited_members.items()):
            function = final(member)
            if isinstance(function, griffe.Function):
                cls.set_member(name, copy_function(function, rename))


def copy_function(function: griffe.Function, rename: Rename) -> griffe.Function:
    """A copy of ``function``, its annotations rewritten."""
    docstring = function.docstring
    copied = griffe.Function(
        function.name,
        lineno=function.lineno,
        endlineno=function.endlineno,
        parameters=griffe.Parameters(
            *(
                griffe.Parameter(
                    parameter.name,
                    annotation=rewrite(parameter.annotation, rename),
                    kind=parameter.kind,
                    default=parameter.default,
                )
                for parameter in function.parameters
            )
        ),
        returns=rewrite(function.returns, rename),
        decorators=function.decorators,
        docstring=docstring
        and griffe.Docstring(
            docstring.value,
            lineno=docstring.lineno,
            endlineno=docstring.endlineno,
            parser=docstring.parser,
            parser_options=docstring.parser_options,
        ),
    )
    copied.labels = set(function.labels)
    return copied


def plain_annotations(pkg: griffe.Module, obj: griffe.Object) -> None:
    """Show strict types and ``Annotated`` aliases as the types they hold."""

    def rename(expr: griffe.ExprName) -> Any:
        if expr.canonical_path in STRICT:
            return griffe.ExprName(STRICT[expr.canonical_path])
        alias = target(pkg, expr.canonical_path)
        value = getattr(alias, "value", None) if alias is not None else None
        if isinstance(value, griffe.ExprSubscript) and str(value.left) in (
            "Annotated",
            *ANNOTATED,
        ):
            return rewrite(value, rename)
        return expr

    if isinstance(obj, griffe.Attribute) and obj.annotation is not None:
        obj.annotation = rewrite(obj.annotation, rename)
    elif isinstance(obj, griffe.Function):
        for parameter in obj.parameters:
            parameter.annotation = rewrite(parameter.annotation, rename)
        obj.returns = rewrite(obj.returns, rename)


def plain_value(pkg: griffe.Module, obj: Any) -> None:
    """Show a constant assigned another of the package with that one's value."""
    while isinstance(obj, griffe.Attribute) and isinstance(
        obj.value, (griffe.ExprName, griffe.ExprAttribute)
    ):
        named = target(pkg, obj.value.canonical_path)
        if not isinstance(named, griffe.Attribute) or named.value is None:
            return
        obj.value = named.value


def public_objects(pkg: griffe.Module) -> Iterator[Any]:
    """What the public modules export (their ``__all__``)."""
    for path in PUBLIC_MODULES:
        module = pkg if path == pkg.path else target(pkg, path)
        if module is None:
            continue
        names = module.exports or [n for n in module.members if n[0] != "_"]
        for name in map(str, names):
            member = module.members.get(name)
            if member is not None and not isinstance(
                final(member), griffe.Module
            ):
                yield member


def is_shown(base: Any, exported: set[str]) -> bool:
    """Whether a base is another package's class, or one lingodoc exports."""
    left = base.left if isinstance(base, griffe.ExprSubscript) else base
    path = getattr(left, "canonical_path", str(left))
    private = any(part.startswith("_") for part in path.split("."))
    return not (path.startswith("lingodoc.") and private) or path in exported


def check(pkg: griffe.Module, obj: Any) -> None:
    """Warn on a type variable or a named default left in a public signature."""
    obj = final(obj)
    functions = [obj] if isinstance(obj, griffe.Function) else []
    if isinstance(obj, griffe.Class):
        functions = [
            final(member)
            for name, member in obj.all_members.items()
            if isinstance(final(member), griffe.Function)
            and (name == "__init__" or not name.startswith("_"))
        ]
    for function in functions:
        for parameter in function.parameters:
            if parameter.name in ("self", "cls"):
                continue
            annotation = parameter.annotation
            found = (
                annotation.iterate(flat=True)
                if isinstance(annotation, griffe.Expr)
                else []
            )
            for name in found:
                path = getattr(name, "canonical_path", "")
                value = getattr(target(pkg, path), "value", "")
                if str(value).startswith("TypeVar("):
                    logger.warning(
                        f"{obj.path}: {parameter.name} is shown as {name}"
                    )
            default = parameter.default
            named = (griffe.ExprName, griffe.ExprAttribute)
            if isinstance(default, named) and str(default) not in (
                "None",
                "True",
                "False",
            ):
                logger.warning(
                    f"{obj.path}.{function.name}: {parameter.name}="
                    f"{default}: write the value, which the reference shows"
                )
