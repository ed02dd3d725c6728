"""The numbers and names that the SDK, its command line and its emulator must agree on.

Each is defined here once; every other module imports it from here. Only the
standard library is imported, so any module (the emulator included) can use
this one without loading the clients.
"""

from __future__ import annotations

API_KEY_ENV = "LINGODOC_API_KEY"
BASE_URL_ENV = "LINGODOC_BASE_URL"
ALLOW_HTTP_HOST_ENV = "LINGODOC_ALLOW_HTTP_HOST"
LOG_ENV = "LINGODOC_LOG"

# The spec's limit on one text (error TEXT_TOO_LONG).
MAX_TEXT_LENGTH = 10_000
# The spec gives no batch limit. The emulator accepts this many texts in one
# request, and translate_many and `lingodoc batch` send this many by default.
MAX_BATCH_ITEMS = 100

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
# Calls in flight at once on an httpx pool. httpcore's pool does work that grows with the
# square of its connections on every request: past about 16 it gets slower, not faster
# (docs/performance.md). aiohttp has no such cost: DefaultAioHttpClient allows its 100.
DEFAULT_MAX_IN_FLIGHT = 16
AIOHTTP_MAX_IN_FLIGHT = 100
# The longest wait the service may ask for (Retry-After, a 429's reset) that the
# retry policy and translate_many's pacing wait out; a longer one is raised.
MAX_SERVER_WAIT = 60.0


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or an address in 127.0.0.0/8 or ``::1``.

    Plain ``http://`` is allowed to such hosts: there a key in clear text never
    crosses a network. Any other host needs the explicit opt-in that names it
    (``allow_http_host`` or ``LINGODOC_ALLOW_HTTP_HOST``).
    """
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    import ipaddress  # only here: a client is made far more rarely than lingodoc is imported

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
