"""One API call: what to send, and how to read the answer into a result.

The clients turn each method's arguments into a ``Call`` (in ``_base_client``),
send it, and hand the envelope's ``data`` to its ``parse``, with the ``Origin``
of the response (its rate limit, request id and the response itself). The
parsers here validate that data as the endpoint's model and attach the origin.
``translate`` and ``translate_batch`` first try their ``read_body``, which reads a
2xx body into the result in one pass (``body_reader``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import httpx

from lingodoc import _lazy
from lingodoc._validation import cut, shown

if TYPE_CHECKING:
    from pydantic_core import CoreSchema, SchemaValidator

    from lingodoc._deadline import Plan
    from lingodoc._exceptions import LingodocError
    from lingodoc._models import (
        BatchTranslation,
        Document,
        Origin,
        TranslationJob,
        TranslationStatus,
        _Result,
    )

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound="_Result")


class Call(Generic[T]):
    """One API call, ready to send: what to send and how to read the answer.

    A plain class with slots rather than a frozen dataclass: one is made for
    every call, and a frozen dataclass takes three times as long to build.
    """

    __slots__ = (
        "idempotent", "json", "method", "options", "params", "parse", "path", "read_body",
    )  # fmt: skip

    def __init__(
        self,
        method: str,
        path: str,
        parse: Callable[[Any, Origin], T],
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotent: bool = True,
        options: Options | None = None,
        read_body: Callable[[bytes], T | None] | None = None,
    ) -> None:
        self.method = method
        self.path = path
        self.parse = parse
        self.json = json
        self.params = params
        self.idempotent = idempotent
        self.options = options
        # The quick way to a 2xx body's result (see ``body_reader``), or None.
        self.read_body = read_body

    def __repr__(self) -> str:
        return f"Call({self.description})"

    @property
    def description(self) -> str:
        """``METHOD /path``, for logs and messages; a path past 100 characters is cut."""
        return f"{self.method} {cut(self.path)}"


class Options:
    """A call's own options (``timeout=``, ``extra_headers=``...), already checked.

    ``None`` on a call that has none, the common case: the request path then does
    nothing more than test for it. One object may serve many calls (each batch of
    ``translate_many``, each poll of ``wait_for_translation``).

    Args:
        timeout: The timeout of each attempt, instead of the client's.
        headers: Headers sent on top of the client's (Authorization excluded).
        query: Query parameters added to the request's.
        body: JSON fields merged into the body, over those the SDK sets.
    """

    __slots__ = ("_names", "body", "headers", "plan", "query", "timeout")

    def __init__(
        self,
        *,
        timeout: httpx.Timeout | None,
        headers: list[tuple[bytes, bytes]] | None,
        query: httpx.QueryParams | None,
        body: dict[str, Any] | None,
    ) -> None:
        self.timeout = timeout
        self.headers = headers
        self._names = frozenset(name.lower() for name, _ in headers or ())
        self.query = query
        self.body = body
        # What ``timeout`` allows an attempt: made on first use, kept for the retries.
        self.plan: Plan | None = None

    def merge_headers(self, base: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """``base`` with these headers on top: one of the same name (in any case) replaces it."""
        if not self.headers:
            return base
        names = self._names
        return [item for item in base if item[0].lower() not in names] + self.headers

    def merge_params(self, params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``params`` with the query parameters added (replacing those of the same name)."""
        if self.query is None:
            return params
        if not params:
            return self.query
        return httpx.QueryParams(params).merge(self.query)

    def merge_body(self, json: Any) -> Any:
        """The body ``json`` (a dict the SDK built) with the extra fields merged over it."""
        if self.body is None or not isinstance(json, dict):
            return json
        return {**json, **self.body}


class Failure:
    """An attempt's error, returned rather than raised by the code that read the response.

    See ``_redaction.raise_scrubbed``: the caller raises it, from a frame that
    holds nothing the server sent.
    """

    __slots__ = ("error",)

    def __init__(self, error: LingodocError) -> None:
        self.error = error


class ShapeError(ValueError):
    """The data of a success envelope is not of the shape the endpoint returns."""

    def __init__(self, problem: str, data: Any) -> None:
        super().__init__(problem)
        self.data = data


_parsers: dict[type[Any], Callable[[Any, Origin], Any]] = {}


def model_parser(cls: type[ModelT]) -> Callable[[Any, Origin], ModelT]:
    """Return a parser that validates ``data`` as ``cls`` and attaches its ``Origin``."""
    parse = _parsers.get(cls)
    if parse is None:
        parse = _parsers[cls] = _new_model_parser(cls)
    return cast("Callable[[Any, Origin], ModelT]", parse)


def _new_model_parser(cls: type[ModelT]) -> Callable[[Any, Origin], ModelT]:
    from pydantic import ValidationError  # loaded with the models already

    def parse(data: Any, origin: Origin) -> ModelT:
        try:
            # What model_validate(data) calls, without its checks of the options it is
            # not given. Looked up on each call: pydantic may rebuild the validator.
            result: ModelT = cls.__pydantic_validator__.validate_python(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'data'}: {e['msg']}" for e in exc.errors()[:3]
            )
            problem = f"the response data is not a {cls.__name__} ({problems})"
            raise ShapeError(problem, data) from None
        _lazy.set_origin(result, origin)
        return result

    return parse


_body_readers: dict[type[Any], Callable[[bytes], Any]] = {}


def body_reader(cls: type[ModelT]) -> Callable[[bytes], ModelT | None]:
    """Return a reader of a success envelope's body as ``cls`` in one pass, or ``None``.

    pydantic-core parses the JSON and validates the data as it goes, building no dict of
    the data: less than half of what ``json.loads`` and the model's validation cost. It
    returns the result only when the usual way (``_envelope.unwrap``, then
    ``model_parser``) would return an equal one, and ``None`` for anything else (not
    JSON, not a success envelope, data of another shape, a surrogate): the usual way
    then reads the body again and raises its error, the same as ever. Only for models
    whose fields are all strict strings (or lists of them), which the JSON and the Python
    modes of pydantic read alike; the result has no origin yet. Not used where pydantic's
    plugins wrap the model's validator (they see every result validated), after the
    model is rebuilt, nor with a pydantic-core that reads duplicate keys otherwise
    (``duplicates_read_last``). (Where ``json.loads`` fails on a body that is valid JSON, as past a
    lowered ``sys.set_int_max_str_digits`` or deep in the caller's recursion, the one
    pass reads it: the only bodies read here and refused the usual way.)
    """
    read = _body_readers.get(cls)
    if read is None:
        read = _body_readers[cls] = _new_body_reader(cls)
    return cast("Callable[[bytes], ModelT | None]", read)


def _envelope_validator(data: CoreSchema) -> SchemaValidator:
    """A validator of the success envelope, ``data`` read by the given schema."""
    from pydantic_core import SchemaValidator, core_schema

    # Strict: pydantic's lax mode would take 1 or "true" for true; unwrap wants true.
    success = core_schema.typed_dict_field(core_schema.bool_schema(strict=True))
    fields = {"success": success, "data": core_schema.typed_dict_field(data)}
    return SchemaValidator(core_schema.typed_dict_schema(fields))


def _new_body_reader(cls: type[ModelT]) -> Callable[[bytes], ModelT | None]:
    from pydantic import ValidationError  # loaded with the models already
    from pydantic_core import SchemaValidator

    validator = cls.__pydantic_validator__
    if not isinstance(validator, SchemaValidator):  # a plugin's wrapper: it sees every result
        return _read_nothing
    if not duplicates_read_last():
        return _read_nothing
    validate_json = _envelope_validator(cls.__pydantic_core_schema__).validate_json

    def read(body: bytes) -> ModelT | None:
        if cls.__pydantic_validator__ is not validator:  # rebuilt since: it may read otherwise
            return None
        try:
            fields = validate_json(body)
        except ValidationError:  # anything the usual way reads otherwise, or refuses
            return None
        result: ModelT | None = fields["data"] if fields["success"] else None
        return result

    return read


def _read_nothing(body: bytes) -> None:
    return None


@functools.cache
def duplicates_read_last() -> bool:
    """Whether this pydantic-core keeps the last of a key sent twice, as ``json.loads`` does.

    Up to 2.27 at least it kept the first in many places of a small object (2.16, which
    pydantic 2.6 brings, and 2.18-2.27: in 88 of 144 orders of three fields and one sent
    twice; 2.33 and later in none): the one pass would then read bodies the usual way
    refuses, so it is not used. Probed once a process, through the one pass's own
    envelope around a model's fields, in under a millisecond.
    """
    from itertools import permutations

    from pydantic_core import ValidationError, core_schema

    text = core_schema.str_schema(strict=True)
    data = core_schema.model_fields_schema(
        {name: core_schema.model_field(text) for name in "abc"}, extra_behavior="allow"
    )
    validate_json = _envelope_validator(data).validate_json

    def read(body: str) -> bool:
        try:
            return bool(validate_json(body)["success"])
        except ValidationError:
            return False

    # The envelope's keys sent twice: the last success, the last data.
    valid = '{"a": "x", "b": "x", "c": "x"}'
    if not read(f'{{"success": false, "success": true, "data": {valid}}}'):
        return False
    if read(f'{{"success": true, "data": {valid}, "data": 1}}'):
        return False
    # A field sent twice, at each place among the others, its last value valid or not.
    for order in permutations(("a", "b", "c", "a again")):
        last = max("a", "a again", key=order.index)
        for last_valid in (True, False):
            members = ", ".join(
                f'"{key[0]}": ' + ('"x"' if key[0] != "a" or (key == last) == last_valid else "1")
                for key in order
            )
            if read(f'{{"success": true, "data": {{{members}}}}}') != last_valid:
                return False
    return True


def parse_documents(data: Any, origin: Origin) -> list[Document]:
    items = data.get("documents") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ShapeError(
            "the document listing is neither a list nor an object with a 'documents' list", data
        )
    parse = model_parser(_lazy.Document)
    return [parse(item, origin) for item in items]


def batch_parser(count: int) -> Callable[[Any, Origin], BatchTranslation]:
    parse = model_parser(_lazy.BatchTranslation)

    def parse_batch(data: Any, origin: Origin) -> BatchTranslation:
        result = parse(data, origin)
        if len(result.translations) != count:
            # Pairing the texts with a short list would silently lose some.
            raise ShapeError(
                f"the batch has {len(result.translations)} translations for {count} texts", data
            )
        return result

    return parse_batch


def status_parser(translation_id: str) -> Callable[[Any, Origin], TranslationStatus]:
    """Return a parser of a poll's status that refuses the status of another translation.

    Another job's status (a cache or a proxy mixing up answers) would pass its progress,
    or its translated document, off as ours.
    """
    return _only(
        _lazy.TranslationStatus, "translation_id", translation_id, "status", "of translation"
    )


def job_parser(document_id: str) -> Callable[[Any, Origin], TranslationJob]:
    """Return a parser of a started job that refuses a job on another document.

    Waiting on it would hand over another document's translation.
    """
    return _only(_lazy.TranslationJob, "document_id", document_id, "job", "for document")


def _only(
    cls: type[ModelT], field: str, expected: str, noun: str, relation: str
) -> Callable[[Any, Origin], ModelT]:
    """Return a parser of ``cls`` that refuses a result whose ``field`` is not ``expected``."""
    parse = model_parser(cls)

    def parse_only(data: Any, origin: Origin) -> ModelT:
        result = parse(data, origin)
        found = getattr(result, field)
        if found != expected:
            raise ShapeError(
                f"the {noun} is {relation} {shown(found)}, not {relation.split()[0]} "
                f"{shown(expected)}",
                data,
            )
        return result

    return parse_only


def batch_body_reader(count: int) -> Callable[[bytes], BatchTranslation | None]:
    """``body_reader`` of a batch, which leaves a batch of another length to ``batch_parser``."""
    read = body_reader(_lazy.BatchTranslation)

    def read_batch(body: bytes) -> BatchTranslation | None:
        result = read(body)
        return result if result is not None and len(result.translations) == count else None

    return read_batch


def batch_call(
    texts: list[str], source: str, target: str, options: Options | None = None
) -> Call[BatchTranslation]:
    """The request of one batch, from arguments already checked."""
    body = {"texts": texts, "source_language": source, "target_language": target}
    count = len(texts)
    return Call(
        "POST", "/translate/batch", batch_parser(count), json=body, options=options,
        read_body=batch_body_reader(count),
    )  # fmt: skip


def parse_data(data: Any, origin: Origin) -> Any:
    return data
