"""The cloud-init document a worker boots with: install nika-os, run ``nika serve --join``.

The Redis URL goes in *without* its password: user data is readable by anyone who can read the
instance's metadata. The worker reads the password from ``/etc/nika/redis_password`` (0600),
which the operator places over SSH or the provider's secret manager (docs/scale.md).
"""

from __future__ import annotations

import shlex
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

PASSWORD_FILE = "/etc/nika/redis_password"
"""Where the worker waits for the Redis password (placed out of band, never in user data)."""


def strip_password(url: str) -> str:
    """``redis://user:secret@host:6379/0`` → ``redis://user@host:6379/0``.

    redis-py also reads a ``password`` query parameter (``…/0?password=secret``): it goes too.
    """
    parts = urlsplit(url)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k.lower() != "password"]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    netloc = parts.netloc
    if parts.password is not None:
        user = parts.username or ""
        netloc = parts.netloc.rpartition("@")[2]
        netloc = f"{user}@{netloc}" if user else netloc
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def render(tenant_id: str, join_url: str, version: str) -> str:
    """The cloud-config for one worker of ``tenant_id`` joining ``join_url``.

    Args:
        tenant_id: The tenant the worker is created for (a validated id).
        join_url: The primary's Redis URL; its password is stripped (see :func:`strip_password`).
        version: The nika-os version to install (the primary's own).

    Returns:
        A ``#cloud-config`` YAML document.
    """
    # Quoted for the shell: a URL may hold a quote or a ``;`` (userinfo and query allow them).
    url = shlex.quote(strip_password(join_url))
    return f"""#cloud-config
# nika-os worker for tenant {tenant_id} (strategy B)
package_update: true
packages: [python3-venv, tmux]
runcmd:
  - [python3, -m, venv, /opt/nika]
  - [/opt/nika/bin/pip, install, "nika-os=={version}"]
  - [install, -d, -m, "0700", /var/lib/nika]
  - - sh
    - -c
    - >-
      until [ -s {PASSWORD_FILE} ]; do sleep 5; done;
      NIKA_OS_DATA_DIR=/var/lib/nika NIKA_REDIS_PASSWORD_FILE={PASSWORD_FILE}
      nohup /opt/nika/bin/nika serve --join {url} >/var/log/nika-worker.log 2>&1 &
"""
