"""The emulator's stand-in for machine translation: a small word table, plainly not a translator.

The rules, which tests can rely on:

* Same source and target language: the text comes back unchanged.
* From ``en`` to ``de``, ``fr`` or ``es``, every word (a run of letters) found in
  [`WORDS`][lingodoc.emulator.WORDS] is replaced, keeping its case (``hello`` -> ``hallo``,
  ``Hello`` -> ``Hallo``, ``HELLO`` -> ``HALLO``); German nouns keep their capital
  (``world`` -> ``Welt``). Everything that is not a letter (spaces, digits, punctuation) is
  kept as it is.
* If any word was not in the table (or the pair is not one of those three), the result is
  prefixed with the target code in brackets: ``"Hello Bob"`` -> ``"[de] Hallo Bob"``,
  ``"Hello"`` to ``ja`` -> ``"[ja] Hello"``.
* ``style="formal"`` uses the polite "you" (``Sie`` / ``vous`` / ``usted``); any other style is
  accepted and has no effect.
"""

from __future__ import annotations

import re

SUPPORTED_LANGUAGES: frozenset[str] = frozenset(
    [
        "ar",
        "bg",
        "cs",
        "da",
        "de",
        "el",
        "en",
        "es",
        "et",
        "fi",
        "fr",
        "he",
        "hi",
        "hu",
        "id",
        "it",
        "ja",
        "ko",
        "lt",
        "lv",
        "nb",
        "nl",
        "pl",
        "pt",
        "ro",
        "ru",
        "sk",
        "sl",
        "sv",
        "th",
        "tr",
        "uk",
        "vi",
        "zh",
    ]
)
"""The ISO 639-1 codes the emulator accepts; any other code is ``INVALID_LANGUAGE``."""

_TARGETS = ("de", "fr", "es")

WORDS: dict[str, tuple[str, str, str]] = {
    "and": ("und", "et", "y"),
    "cat": ("Katze", "chat", "gato"),
    "day": ("Tag", "jour", "día"),
    "document": ("Dokument", "document", "documento"),
    "dog": ("Hund", "chien", "perro"),
    "friend": ("Freund", "ami", "amigo"),
    "good": ("gut", "bon", "bueno"),
    "goodbye": ("tschüss", "au revoir", "adiós"),
    "hello": ("hallo", "bonjour", "hola"),
    "is": ("ist", "est", "es"),
    "morning": ("Morgen", "matin", "mañana"),
    "my": ("mein", "mon", "mi"),
    "night": ("Nacht", "nuit", "noche"),
    "no": ("nein", "non", "no"),
    "please": ("bitte", "s'il vous plaît", "por favor"),
    "thank": ("danke", "merci", "gracias"),
    "thanks": ("danke", "merci", "gracias"),
    "the": ("die", "le", "el"),
    "this": ("dies", "ceci", "esto"),
    "translation": ("Übersetzung", "traduction", "traducción"),
    "welcome": ("willkommen", "bienvenue", "bienvenido"),
    "world": ("Welt", "monde", "mundo"),
    "yes": ("ja", "oui", "sí"),
    "you": ("du", "tu", "tú"),
}
"""English word -> its German, French and Spanish stand-ins."""

_FORMAL: dict[str, tuple[str, str, str]] = {"you": ("Sie", "vous", "usted")}

_WORD = re.compile(r"[^\W\d_]+")


def _match_case(original: str, word: str) -> str:
    if len(original) > 1 and original.isupper():
        return word.upper()
    if original[0].isupper():
        return word[0].upper() + word[1:]
    return word


def translate_text(text: str, source: str, target: str, style: str | None = None) -> str:
    """Return the emulator's "translation" of ``text``, to compute expected values in tests.

    It is what ``/translate`` and ``/translate/batch`` answer: the same text, languages and
    style always give the same result. Same source and target: the text unchanged. From
    ``en`` to ``de``, ``fr`` or ``es``: each word of [`WORDS`][lingodoc.emulator.WORDS]
    replaced, keeping its case. If a word is not in the table, or for another pair, the result
    is prefixed with the target code: ``translate_text("Hello Bob", "en", "de")`` is
    ``"[de] Hallo Bob"``.

    Args:
        text: The text.
        source: The source language code, lower case (``"en"``).
        target: The target language code, lower case (``"de"``).
        style: ``"formal"`` for the polite "you" (``Sie``, ``vous``, ``usted``); any other
            style changes nothing.

    Returns:
        The "translation": plainly not a real one, but exact and predictable.
    """
    if source == target:
        return text
    words: dict[str, str] = {}
    if source == "en" and target in _TARGETS:
        column = _TARGETS.index(target)
        table = {**WORDS, **_FORMAL} if style == "formal" else WORDS
        words = {english: row[column] for english, row in table.items()}
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        word = match.group(0)
        translated = words.get(word.lower())
        if translated is None:
            unknown = True
            return word
        return _match_case(word, translated)

    result = _WORD.sub(replace, text)
    return f"[{target}] {result}" if unknown else result
