"""The numbers and names that the SDK, its command line and its emulator must agree on.

Standard library only, so any module (the emulator's too) can import it without the clients.
"""

from __future__ import annotations

import ipaddress

# The environment variables the SDK reads (its command line reads one more, LINGODOC_CACHE).
API_KEY_ENV = "LINGODOC_API_KEY"
BASE_URL_ENV = "LINGODOC_BASE_URL"
ALLOW_HTTP_HOST_ENV = "LINGODOC_ALLOW_HTTP_HOST"
LOG_ENV = "LINGODOC_LOG"
# The documentation site (pyproject.toml's Documentation URL), named by messages.
DOCS_URL = "https://lingodoc.github.io/lingodoc-python/"
# PRAGMA application_id of an SQLiteCache file ("LgDc"): `lingodoc cache` opens no other.
CACHE_APPLICATION_ID = 0x4C674463

# What errors hint (``LingodocError.hint``), in the SDK's terms; the command line knows them
# by these, and says them in its flags' terms. An answer not the service's: a web server at
# the host's root, a proxy, a login page.
GET_A_KEY = "create a key in your lingodoc account settings"
WHAT_BASE_URL_IS = "base_url is the service's address, up to and including /v1"
NOT_THE_SERVICE = (
    f"is base_url= (or {BASE_URL_ENV}) the service's address, up to and including /v1?"
)
TRY_THE_EMULATOR = (
    "to try the SDK without an account, start the emulator: `lingodoc emulator` in another "
    "terminal, then export the two variables it prints; or, in code, use "
    "lingodoc.emulator.Emulator().client()"
)
# No connection made (refused, or no answer to connecting): to the address, or its proxy.
SERVICE_UNREACHABLE = (
    "is the service (or `lingodoc emulator`) running at that address, and is base_url= "
    f"(or {BASE_URL_ENV}) right?"
)
PROXY_UNREACHABLE = (
    "is the proxy running, and should requests to the service go through it? (NO_PROXY "
    "names the hosts that should not)"
)
# Connected, but no answer within the attempt's timeout.
SLOW_ANSWER = "if the service is slow rather than stuck, raise timeout= (each attempt's limit)"

# The spec's limit on one text (error TEXT_TOO_LONG).
MAX_TEXT_LENGTH = 10_000
# Not in the spec: the emulator's batch limit; translate_many's and `lingodoc batch`'s default.
MAX_BATCH_ITEMS = 100

DEFAULT_TIMEOUT = 30.0
# httpcore's pool slows past about 16 connections (docs/performance.md); aiohttp's does not.
DEFAULT_MAX_IN_FLIGHT = 16
AIOHTTP_MAX_IN_FLIGHT = 100
# Idle connections of the SDK's own transport are closed after this long, as httpx's are.
KEEPALIVE_EXPIRY = 5.0
# The longest wait asked for (Retry-After, a 429's reset) that is waited out, not raised.
MAX_SERVER_WAIT = 60.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost``, in 127.0.0.0/8 or ``::1``: ``http://`` may go there."""
    host = host.strip("[]").lower()
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
