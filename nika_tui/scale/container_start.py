"""The start script of a worker in a container (a RunPod pod): no cloud-init, no systemd.

A pod is a container that runs its image's start command, so the cloud-config document of
:mod:`nika_tui.scale.cloud_init` cannot boot it: its units would never start. The pod gets this
bash script instead (decision 510). It does what the units do there: install nika-os in a venv
(once: a restarted container keeps its disk), take the Redis password from the RunPod secret
``nika_redis_password`` (the pod's env holds only the reference :data:`SECRET_REF`, which RunPod
fills at boot) into ``/etc/nika/redis_password`` (0600) and out of the environment, or else
wait until the operator places that file over SSH (never in the script: the pod's env is
readable from RunPod's API), then run ``nika serve --join`` with the password handed over as a file
(``NIKA_REDIS_PASSWORD_FILE``), restarting it 5 s after a crash (systemd's ``Restart=always``)
and passing a SIGTERM on to it, so a stopped pod's worker flushes its shards and releases its
leases. Secrets other than the password go in ``/etc/nika/worker.env`` (0600), as on a VPS.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from nika_tui.domain.tenant import Provider
from nika_tui.scale import cloud_init
from nika_tui.scale.cloud_init import DATA_DIR, PREFIX, check_words, strip_password

ETC_DIR = "/etc/nika"
"""Where the operator places ``redis_password`` and ``worker.env`` (0700)."""
SECRET_ENV = "NIKA_REDIS_PASSWORD"
"""The pod's env var that may carry the password, from a RunPod secret reference."""
SECRET_REF = "{{ RUNPOD_SECRET_nika_redis_password }}"
"""What the pod's env holds: RunPod substitutes the secret's value at boot; the API shows
only this reference."""
RESTART_S = 5
"""Seconds before a crashed worker is started again (systemd's ``RestartSec``)."""


def render(
    tenant_id: str,
    join_url: str,
    version: str,
    worker_id: str = "",
    *,
    prefix: str = PREFIX,
    etc_dir: str = ETC_DIR,
    data_dir: str = DATA_DIR,
) -> str:
    """The bash start script of one containerised worker of ``tenant_id``.

    Args:
        tenant_id: The tenant the worker is created for (a validated id).
        join_url: The primary's Redis URL; its password is stripped.
        version: The nika-os version to install when ``{prefix}/bin/nika`` is missing.
        worker_id: The worker id it runs as; empty: the default id.
        prefix: The venv nika-os lives in.
        etc_dir: Where the operator places the password and the env file.
        data_dir: The worker's state (0700).

    Returns:
        A bash script (``#!/bin/bash``).

    Raises:
        ScaleError: A control character in ``join_url`` or ``worker_id``.
    """
    check_words(join_url, worker_id)
    q = shlex.quote
    args = ["serve", "--join", strip_password(join_url)]
    if worker_id:
        args += ["--worker-id", worker_id]
    serve = " ".join([q(f"{prefix}/bin/nika"), *(q(a) for a in args)])
    password = f"{etc_dir}/redis_password"
    env_file = f"{etc_dir}/worker.env"
    return f"""#!/bin/bash
# nika-os worker for tenant {tenant_id} (strategy B, in a container: no systemd)
set -eu
umask 077
mkdir -p {q(etc_dir)} {q(data_dir)}
chmod 0700 {q(etc_dir)} {q(data_dir)}
if [ ! -x {q(prefix + "/bin/nika")} ]; then
  python3 -m venv {q(prefix)}
  {q(prefix + "/bin/pip")} install --quiet {q("nika-os==" + version)}
fi
secret="${{{SECRET_ENV}:-}}"
unset {SECRET_ENV}
case "$secret" in ""|"{{{{"*) ;; *) printf '%s' "$secret" > {q(password)} ;; esac
secret=
echo "nika worker: waiting for {password} (a RunPod secret, or over SSH, 0600)" >&2
until [ -s {q(password)} ]; do sleep 2; done
if [ -f {q(env_file)} ]; then set -a; . {q(env_file)}; set +a; fi
export HOME={q(data_dir)} NIKA_OS_DATA_DIR={q(data_dir + "/data")}
export NIKA_OS_CONFIG_DIR={q(data_dir + "/config")} NIKA_REDIS_PASSWORD_FILE={q(password)}
child=
stop() {{ trap - TERM INT; kill -TERM "$child" 2>/dev/null || true; wait; exit 0; }}
trap stop TERM INT
while :; do
  {serve} &
  child=$!
  status=0
  wait "$child" || status=$?
  echo "nika worker exited ($status); starting it again in {RESTART_S} s" >&2
  sleep {RESTART_S} &
  wait $! || true
done
"""


def boot_document(provider: Provider) -> Callable[[str, str, str, str], str]:
    """What a new instance of ``provider`` boots: RunPod's pods (containers) this module's
    start script, every VPS provider the cloud-config of :mod:`~nika_tui.scale.cloud_init`."""
    return render if provider is Provider.RUNPOD else cloud_init.render
