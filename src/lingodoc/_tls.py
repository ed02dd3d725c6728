"""The SSL contexts of the SDK's own HTTP clients: one per certificate setting, shared.

httpx builds an SSL context for every client it makes, loading the certificate
authorities into OpenSSL: about 20 ms and 850 KiB each, even for a client that
never opens a TLS connection (an ``http://`` base URL, such as the emulator's).
Every client the SDK makes verifies certificates the same way, as httpx does by
default: against certifi's authorities, or, when it trusts the environment, those
of ``SSL_CERT_FILE`` (else ``SSL_CERT_DIR``). So it shares one context per such
setting:

- With neither variable set (or a client that does not read the environment), the
  client gets ``DEFERRED``, a stand-in that the SDK's network streams (``_network``)
  swap for the shared default context at the first TLS handshake: a client that
  never opens one never builds one, and the first that does builds it for all.
  httpx's default cannot fail to build, so nothing is lost by building it late.
- With ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` set, the context is built when the
  client is (an unusable file must be refused there, naming the variable), and
  shared with the later clients of the same setting: the same variable, the same
  value, and the same file (its inode, change and modification times, and size), so a
  changed variable, or a certificate file replaced in place, gives new clients a new
  context.

A caller's own ``http_client`` keeps the context it was made with: nothing here
touches it. The contexts are built by ``httpx.create_ssl_context``, so they verify
exactly as httpx's own would. The SDK speaks HTTP/1.1 only, so the ALPN protocols
httpcore sets on a context before each handshake are the same for every client
that shares it.
"""

from __future__ import annotations

import os
import ssl
import threading

import httpx

# The variables httpx reads with trust_env, in its order: SSL_CERT_DIR only without SSL_CERT_FILE.
CERTIFICATE_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")
# Contexts kept for settings met before; the oldest goes first past this many (a process
# that keeps changing SSL_CERT_FILE must not keep every context it ever built).
MAX_CONTEXTS = 8

Setting = tuple[str, str, tuple[int, ...] | None]
_DEFAULT: Setting = ("", "", None)

# A context for no handshake: it stands for the default context until the first one.
# Should it ever reach a handshake unswapped, it verifies against no authority at all,
# so the connection fails; it is never less safe than the real one.
DEFERRED = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)

_contexts: dict[Setting, ssl.SSLContext] = {}
_lock = threading.Lock()


def _in_a_forked_child() -> None:
    # Another thread of the parent may have held the lock at the fork. The contexts
    # themselves are plain memory: the child can go on using them.
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX only, as fork is
    os.register_at_fork(after_in_child=_in_a_forked_child)


def setting(trust_env: bool) -> Setting:
    """The certificate setting a client made now with ``trust_env`` would verify with."""
    if not trust_env:
        return _DEFAULT
    for name in CERTIFICATE_ENV:
        value = os.environ.get(name)
        if value:
            try:
                stat = os.stat(value)
            except OSError:  # building the context will say what is wrong
                return (name, value, None)
            # ctime and the inode too: a bundle replaced by one of the same size with its
            # mtime kept (cp -p, rsync -a, reproducible images) must not get the old context.
            identity = (stat.st_dev, stat.st_ino, stat.st_ctime_ns, stat.st_mtime_ns, stat.st_size)
            return (name, value, identity)
    return _DEFAULT


def verify_for(trust_env: bool) -> ssl.SSLContext:
    """The ``verify=`` of a new SDK http client: a shared context, or ``DEFERRED``.

    Raises:
        OSError: If ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` (read with ``trust_env``)
            names no usable certificates (``ssl.SSLError`` is an ``OSError``).
    """
    wanted = setting(trust_env)
    if wanted == _DEFAULT:
        return DEFERRED
    return _shared(wanted, trust_env)


def resolve(context: ssl.SSLContext) -> ssl.SSLContext:
    """The context to hand shake with: the shared default one in place of ``DEFERRED``."""
    if context is not DEFERRED:
        return context
    return _shared(_DEFAULT, trust_env=False)


def _shared(wanted: Setting, trust_env: bool) -> ssl.SSLContext:
    context = _contexts.get(wanted)
    if context is not None:
        return context
    with _lock:  # one thread builds it; the others that raced for it wait and share it
        context = _contexts.get(wanted)
        if context is not None:
            return context
        context = httpx.create_ssl_context(trust_env=trust_env)
        context.set_alpn_protocols(["http/1.1"])
        # Kept only if the environment did not change while it was built: then it is
        # the context of the setting it was built for.
        if setting(trust_env) == wanted:
            while len(_contexts) >= MAX_CONTEXTS:
                del _contexts[next(iter(_contexts))]
            _contexts[wanted] = context
        return context
