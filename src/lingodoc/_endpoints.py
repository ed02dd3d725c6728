"""The endpoints: each method's arguments checked (before sending) and turned into a `Call`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from lingodoc import _lazy, _validation
from lingodoc._exceptions import InvalidArgument, InvalidArgumentType, cut, shown
from lingodoc._options import Options

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound="BaseModel")


@dataclass(slots=True, eq=False, repr=False)
class Call(Generic[T]):
    """One API call, ready to send: what to send (``path`` escaped) and how to read the answer."""

    method: str
    path: str
    parse: Callable[[Any, _lazy.Origin], T]  # the envelope's data to the result, or ShapeError
    _: KW_ONLY
    json: Any = None
    params: Mapping[str, Any] | None = None
    idempotent: bool = True  # safe to resend even if the server may have acted on it
    options: Options | None = None

    def __repr__(self) -> str:
        return f"Call({self.description})"

    @property
    def description(self) -> str:
        """``METHOD /path``, for logs and messages; a path past 100 characters is cut."""
        return f"{self.method} {cut(self.path)}"


class ShapeError(ValueError):
    """The data of a success envelope is not of the shape the endpoint returns."""

    def __init__(self, problem: str, data: Any) -> None:
        super().__init__(problem)
        self.data = data


def translate(
    text: str, source: str, target: str, style: str | None, options: Options | None
) -> Call[_lazy.TextTranslation]:
    """``POST /translate``."""
    body = {
        "text": _validation.text(text),
        "source_language": _validation.language(source, "source_language"),
        "target_language": _validation.language(target, "target_language"),
    }
    if _validation.optional(style, "style", str) is not None:
        body["style"] = style  # type: ignore[assignment]  # checked: a str
    return Call("POST", "/translate", _model(_lazy.TextTranslation), json=body, options=options)


def translate_batch(
    texts: Sequence[str], source: str, target: str, options: Options | None
) -> Call[_lazy.BatchTranslation]:
    """``POST /translate/batch``."""
    return batch(
        _validation.texts(texts),
        _validation.language(source, "source_language"),
        _validation.language(target, "target_language"),
        options,
    )


def batch(
    texts: list[str], source: str, target: str, options: Options | None
) -> Call[_lazy.BatchTranslation]:
    """``POST /translate/batch`` from arguments already checked (``translate_many``'s batches)."""
    body = {"texts": texts, "source_language": source, "target_language": target}
    # Pairing the texts with a short list would silently lose some.
    says = "the batch has {} translations for {} texts"
    parse = _only(_lazy.BatchTranslation, lambda batch: len(batch.translations), len(texts), says)
    return Call("POST", "/translate/batch", parse, json=body, options=options)


def translate_document(
    document_id: str,
    target: str,
    style: str | None,
    use_translation_memory: bool | None,
    options: Options | None,
) -> Call[_lazy.TranslationJob]:
    """``POST /documents/{document_id}/translate``: starts a job, so it is not idempotent."""
    path = f"/documents/{_validation.path_segment(document_id, 'document_id')}/translate"
    body: dict[str, Any] = {"target_language": _validation.language(target, "target_language")}
    if _validation.optional(style, "style", str) is not None:
        body["style"] = style
    if _validation.optional(use_translation_memory, "use_translation_memory", bool) is not None:
        body["use_translation_memory"] = use_translation_memory
    # A job on another document would hand over another document's translation.
    says = "the job is for document {}, not for {}"
    parse = _only(_lazy.TranslationJob, lambda job: job.document_id, document_id, says)
    return Call("POST", path, parse, json=body, idempotent=False, options=options)


def get_translation(translation_id: str, options: Options | None) -> Call[_lazy.TranslationStatus]:
    """``GET /translations/{translation_id}``."""
    path = f"/translations/{_validation.path_segment(translation_id, 'translation_id')}"
    # Another job's status (a cache or a proxy mixing up answers) would pass for ours.
    says = "the status is of translation {}, not of {}"
    parse = _only(_lazy.TranslationStatus, lambda job: job.translation_id, translation_id, says)
    return Call("GET", path, parse, options=options)


def list_documents(options: Options | None) -> Call[list[_lazy.Document]]:
    """``GET /documents``: the listing as a list, or an object holding one as ``documents``."""
    return Call("GET", "/documents", _parse_documents, options=options)


def raw(
    method: str, path: str, json: Any, params: Mapping[str, Any] | None, options: Options | None
) -> Call[Any]:
    """Any path under ``base_url`` (``request()``): the ``data`` as plain JSON."""
    if not isinstance(method, str) or not method.isalpha():
        raise InvalidArgument(f"method must be an HTTP method such as 'GET', not {shown(method)}")
    method = method.upper()
    path = _validation.relative_path(path)
    if params:
        path, params = merge_query(path, params)
    return Call(
        method, path, lambda data, origin: data, json=json, params=params or None,
        idempotent=method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE"),  # HTTP's idempotent
        options=options,
    )  # fmt: skip


def merge_query(path: str, params: Mapping[str, Any]) -> tuple[str, httpx.QueryParams]:
    """Move the query in ``path`` into ``params`` (which win), as httpx would drop it."""
    route, _, query = path.partition("?")
    try:  # a path without a query merges into an empty one
        return route, httpx.QueryParams(query.partition("#")[0]).merge(params)
    except (TypeError, ValueError, AttributeError) as exc:
        problem = str(exc)
    # Raised outside the except block: no chained httpx frames.
    raise InvalidArgumentType(f"params cannot be sent as query parameters: {cut(problem)}")


@functools.cache  # one per model: calls waiting by the thousand hold no parser of their own
def _model(cls: type[ModelT]) -> Callable[[Any, _lazy.Origin], ModelT]:
    """Return a parser that validates ``data`` as ``cls`` and attaches its ``Origin``."""
    from pydantic import ValidationError

    def parse(data: Any, origin: _lazy.Origin) -> ModelT:
        try:
            result = cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'data'}: {e['msg']}" for e in exc.errors()[:3]
            )
            problem = f"the response data is not a {cls.__name__} ({problems})"
            raise ShapeError(problem, data) from None
        _lazy.set_origin(result, origin)  # type: ignore[arg-type]  # a result model
        return result

    return parse


def _only(
    cls: type[ModelT], found: Callable[[ModelT], object], want: object, says: str
) -> Callable[[Any, _lazy.Origin], ModelT]:
    """A parser of ``cls`` refusing a result of which ``found`` is not ``want`` (``says`` why)."""
    parse: Callable[[Any, _lazy.Origin], ModelT] = _model(cls)

    def parse_only(data: Any, origin: _lazy.Origin) -> ModelT:
        result = parse(data, origin)
        if (value := found(result)) != want:
            raise ShapeError(says.format(shown(value), shown(want)), data)
        return result

    return parse_only


def _parse_documents(data: Any, origin: _lazy.Origin) -> list[_lazy.Document]:
    items = data.get("documents") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ShapeError(
            "the document listing is neither a list nor an object with a 'documents' list", data
        )
    parse = _model(_lazy.Document)
    return [parse(item, origin) for item in items]
