"""Redis URLs as people write them: checked once, IPv6 literals included, shown without secrets.

redis-py reads ``redis://[::1]:6379/0`` right, but a malformed URL (an IPv6 address without
brackets, an unclosed bracket, a port out of range) surfaces from it as a bare ``ValueError``
deep in a connection. :func:`check_redis_url` turns that into one line naming the variable and
the fix; :func:`redact` is what messages and logs show.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit, urlunsplit

from nika_tui.errors import ConfigError

SCHEMES = ("redis", "rediss", "unix")


def host_port(parts: SplitResult) -> str:
    """The netloc without its userinfo, as written: an IPv6 host keeps its brackets."""
    return parts.netloc.rpartition("@")[2]


def check_redis_url(url: str, name: str = "REDIS_URL") -> str:
    """``url`` stripped, once it is a Redis URL redis-py reads as meant.

    Args:
        url: ``redis://[user:pass@]host[:port][/db]``, ``rediss://…`` or ``unix:///path``.
        name: What the URL came from, for the message (a variable or an option).

    Returns:
        The URL without surrounding blanks.

    Raises:
        ConfigError: Not such a URL; the hint gives the form (IPv6: in brackets).
    """
    url = url.strip()
    example = "redis://HOST:6379/0 (an IPv6 address in brackets: redis://[::1]:6379/0)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises only when read
    except ValueError as exc:
        raise ConfigError(
            f"{name} is not a valid Redis URL ({exc}): {redact(url)}", f"write it as {example}"
        ) from None
    if parts.scheme not in SCHEMES:
        raise ConfigError(
            f"{name} is not a Redis URL (scheme {parts.scheme or 'missing'!r}): {redact(url)}",
            f"write it as {example}",
        )
    if parts.scheme == "unix":
        if not parts.path:
            raise ConfigError(
                f"{name} names no socket: {url}", "write it as unix:///path/redis.sock"
            )
        return url
    if not parts.hostname:
        raise ConfigError(f"{name} names no host: {redact(url)}", f"write it as {example}")
    return url


def redact(url: str) -> str:
    """``url`` with its userinfo and any ``password=`` query value masked (for messages)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unreadable URL>"
    pairs = parts.query.split("&") if parts.query else []
    secret_query = any(p.lower().startswith("password=") for p in pairs)
    if "@" not in parts.netloc and not secret_query:
        return url  # nothing to hide: shown exactly as written
    netloc = "***@" + host_port(parts) if "@" in parts.netloc else parts.netloc
    query = "&".join("password=***" if p.lower().startswith("password=") else p for p in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
