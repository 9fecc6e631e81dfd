"""The cloud-init document a worker boots with: install nika-os, run ``nika serve --join``.

The Redis URL goes in *without* its password: user data is readable by anyone who can read the
instance's metadata. The worker reads the password from ``/etc/nika/redis_password`` (0600),
which the operator places over SSH or the provider's secret manager (docs/scale.md).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def strip_password(url: str) -> str:
    """``redis://user:secret@host:6379/0`` → ``redis://user@host:6379/0``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}@{host}" if user else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def render(tenant_id: str, join_url: str, version: str, worker_id: str = "") -> str:
    """The cloud-config for one worker of ``tenant_id`` joining ``join_url`` as ``worker_id``
    (the id a decommission drains before it deletes the instance)."""
    url = strip_password(join_url)
    as_id = f" --worker-id '{worker_id}'" if worker_id else ""
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
      until [ -s /etc/nika/redis_password ]; do sleep 5; done;
      NIKA_OS_DATA_DIR=/var/lib/nika NIKA_REDIS_PASSWORD_FILE=/etc/nika/redis_password
      nohup /opt/nika/bin/nika serve --join '{url}'{as_id} >/var/log/nika-worker.log 2>&1 &
"""
