"""The cloud-init document a worker boots with: install nika-os, run ``nika serve --join``.

The worker is a systemd service (``nika-worker.service``), so it comes back after a reboot and
after a crash; ``nika-worker.path`` starts it once the Redis password has been placed, and at
every boot after that (decision 458).

The Redis URL goes in *without* its password: user data is readable by anyone who can read the
instance's metadata. The operator places the password in ``/etc/nika/redis_password`` (0600)
over SSH or the provider's secret manager; the unit hands it to the worker as a systemd
credential (``LoadCredential``: a private 0400 copy only the service can read), never in the
unit, the environment or the command line. Any other secret a worker needs (a key a tenant's
config refers to by ``env``) goes in ``/etc/nika/worker.env``, the unit's 0600
``EnvironmentFile``, placed the same way.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from nika_tui.errors import ScaleError

PASSWORD_FILE = "/etc/nika/redis_password"
"""Where the operator places the Redis password (out of band, never in user data)."""
ENV_FILE = "/etc/nika/worker.env"
"""The unit's ``EnvironmentFile`` (0600, root): secrets the operator adds, never user data."""
UNIT = "nika-worker.service"
PATH_UNIT = "nika-worker.path"
PREFIX = "/opt/nika"
"""The venv nika-os is installed into."""
DATA_DIR = "/var/lib/nika"
"""The worker's state (``StateDirectory``, 0700, owned by the ``nika`` user)."""


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


def systemd_word(word: str) -> str:
    """One ``ExecStart`` argument, double-quoted as systemd reads it: backslash and quote
    escaped, ``%`` (specifiers) and ``$`` (variables) doubled, so it arrives unchanged."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def check_words(join_url: str, worker_id: str) -> None:
    """Refuse a control character in the join URL or the worker id.

    Raises:
        ScaleError: One is there.
    """
    if any(ord(c) < 32 or ord(c) == 127 for c in join_url + worker_id):
        # urlsplit drops newlines silently: refuse rather than start a worker on another URL.
        raise ScaleError(
            "the join URL or worker id holds a control character",
            "fix NIKA_JOIN_URL (or REDIS_URL): one line, no control characters",
        )


def service_unit(join_url: str, worker_id: str = "", prefix: str = PREFIX) -> str:
    """The ``nika-worker.service`` unit (the password-less URL; see :func:`render`).

    Raises:
        ScaleError: A control character in ``join_url`` or ``worker_id``.
    """
    check_words(join_url, worker_id)
    args = ["serve", "--join", strip_password(join_url)]
    if worker_id:
        args += ["--worker-id", worker_id]
    exec_start = " ".join([f"{prefix}/bin/nika", *(systemd_word(a) for a in args)])
    return f"""[Unit]
Description=nika-os memory-service worker (nika serve --join)
Wants=network-online.target
After=network-online.target
StartLimitIntervalSec=0

[Service]
Type=simple
User=nika
Group=nika
StateDirectory=nika
StateDirectoryMode=0700
UMask=0077
Environment=HOME={DATA_DIR}
Environment=NIKA_OS_DATA_DIR={DATA_DIR}/data
Environment=NIKA_OS_CONFIG_DIR={DATA_DIR}/config
Environment=NIKA_REDIS_PASSWORD_FILE=%d/redis_password
EnvironmentFile=-{ENV_FILE}
LoadCredential=redis_password:{PASSWORD_FILE}
ExecStart={exec_start}
Restart=always
RestartSec=5
TimeoutStopSec=90
KillSignal=SIGTERM
NoNewPrivileges=yes
ProtectSystem=full
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
"""


def path_unit() -> str:
    """``nika-worker.path``: starts the worker once the password file exists (and at boot)."""
    return f"""[Unit]
Description=Start the nika-os worker once its Redis password is placed

[Path]
PathExists={PASSWORD_FILE}
Unit={UNIT}

[Install]
WantedBy=multi-user.target
"""


def _indented(text: str) -> str:
    return "".join(f"      {line}\n" if line else "\n" for line in text.splitlines())


def render(tenant_id: str, join_url: str, version: str, worker_id: str = "") -> str:
    """The cloud-config for one worker of ``tenant_id`` joining ``join_url`` as ``worker_id``.

    Args:
        tenant_id: The tenant the worker is created for (a validated id).
        join_url: The primary's Redis URL; its password is stripped (see :func:`strip_password`).
        version: The nika-os version to install (the primary's own).
        worker_id: The worker id it runs as (the one a decommission drains before it deletes
            the instance, decision 381); empty: the default id.

    Returns:
        A ``#cloud-config`` YAML document.
    """
    env_note = (
        "# Secrets the worker needs (KEY=value lines), placed over SSH: never in user data.\n"
    )
    return f"""#cloud-config
# nika-os worker for tenant {tenant_id} (strategy B)
package_update: true
packages: [python3-venv, tmux]
users:
  - default
  - name: nika
    system: true
    homedir: {DATA_DIR}
    no_create_home: true
    shell: /usr/sbin/nologin
write_files:
  - path: {ENV_FILE}
    owner: root:root
    permissions: "0600"
    content: |
{_indented(env_note)}  - path: /etc/systemd/system/{UNIT}
    owner: root:root
    permissions: "0644"
    content: |
{_indented(service_unit(join_url, worker_id))}  - path: /etc/systemd/system/{PATH_UNIT}
    owner: root:root
    permissions: "0644"
    content: |
{_indented(path_unit())}runcmd:
  - [chmod, "0700", /etc/nika]
  - [python3, -m, venv, {PREFIX}]
  - [{PREFIX}/bin/pip, install, "nika-os=={version}"]
  - [systemctl, daemon-reload]
  - [systemctl, enable, --now, {PATH_UNIT}]
"""
