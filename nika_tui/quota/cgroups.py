"""CPU and RAM limits of a tenant's kernel through its own cgroup, ``nika-tenant-{id}``.

Detection reads ``/proc/self/mountinfo`` and ``/proc/self/cgroup``:

- **cgroup v2** — the unified mount, when ``cpu`` and ``memory`` are in the ``cgroup.controllers``
  of our own cgroup and that cgroup's ``cgroup.subtree_control`` enables them (a delegated
  subtree, e.g. a systemd user slice): ``cpu.max`` = ``{quota} {period}``, ``memory.max``;
- **cgroup v1** — where ``cpu`` and ``memory`` are mounted as v1 hierarchies (this machine):
  ``cpu.cfs_period_us`` / ``cpu.cfs_quota_us`` and ``memory.limit_in_bytes``;
- **none** — neither is writable; the reason is given and the fallback is *monitoring*: usage
  is read from ``/proc`` and a breach is reported on the bus, not enforced.

The tenant's cgroup is created *under our own* cgroup in each hierarchy (never at a root we were
not given), so a container's or a slice's limits still bound every tenant. CPU percent is of one
core (``200`` = two cores), as ``Quotas.cpu_percent`` says.
"""

from __future__ import annotations

import contextlib
import errno
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from nika_tui.errors import QuotaError

CFS_PERIOD_US = 100_000
MIB = 1024 * 1024


class CgroupMode(StrEnum):
    V2 = "v2"
    V1 = "v1"
    NONE = "none"


FALLBACK = "monitoring only: usage read from /proc, breaches reported on the bus, not enforced"


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """Which cgroup version limits kernels here, where, or why none can."""

    mode: CgroupMode
    reason: str
    dirs: dict[str, Path] = field(default_factory=dict)
    """v1: ``{"cpu": dir, "memory": dir}`` (our own cgroup in each); v2: ``{"unified": dir}``."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (``nika doctor``, ``nika quota status``)."""
        return {
            "mode": self.mode.value,
            "reason": self.reason,
            "dirs": {k: str(v) for k, v in self.dirs.items()},
            "fallback": FALLBACK if self.mode is CgroupMode.NONE else None,
        }


def _mounts(proc: Path) -> list[tuple[Path, str, set[str]]]:
    """``(mount point, fstype, super options)`` of every cgroup mount."""
    out: list[tuple[Path, str, set[str]]] = []
    with contextlib.suppress(OSError):
        for line in (proc / "self" / "mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            parts, rest = left.split(), right.split()
            if len(parts) >= 5 and len(rest) >= 3 and rest[0] in ("cgroup", "cgroup2"):
                out.append((Path(parts[4]), rest[0], set(rest[2].split(","))))
    return out


def _own_paths(proc: Path) -> dict[str, str]:
    """Controller (or ``""`` for v2) → our cgroup path, from ``/proc/self/cgroup``."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in (proc / "self" / "cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                out[name] = path
    return out


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def detect(proc: Path = Path("/proc")) -> CgroupSupport:
    """Find the cgroup version that can limit a kernel here, or say why none can."""
    mounts = _mounts(proc)
    own = _own_paths(proc)
    reasons: list[str] = []
    for mount, fstype, _ in mounts:
        if fstype != "cgroup2":
            continue
        here = mount / own.get("", "/").lstrip("/")
        try:
            available = set((here / "cgroup.controllers").read_text().split())
            enabled = set((here / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if {"cpu", "memory"} <= available and {"cpu", "memory"} <= enabled and _writable(here):
            return CgroupSupport(CgroupMode.V2, f"cgroup v2 delegated at {here}", {"unified": here})
        reasons.append(
            f"cgroup v2 at {here}: cpu+memory not delegated (controllers {sorted(available)}, "
            f"subtree {sorted(enabled)})"
        )
    dirs: dict[str, Path] = {}
    for controller in ("cpu", "memory"):
        for mount, fstype, options in mounts:
            if fstype == "cgroup" and controller in options:
                here = mount / own.get(controller, "/").lstrip("/")
                if _writable(here):
                    dirs[controller] = here
                else:
                    reasons.append(f"cgroup v1 {controller} at {here} is not writable (not root?)")
                break
        else:
            reasons.append(f"no cgroup v1 {controller} hierarchy mounted")
    if len(dirs) == 2:
        return CgroupSupport(CgroupMode.V1, "cgroup v1 cpu and memory hierarchies writable", dirs)
    return CgroupSupport(CgroupMode.NONE, "; ".join(reasons) or "no cgroup mount found")


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        hint = "run the service as root or in a delegated cgroup; see `nika doctor`"
        if exc.errno == errno.EBUSY and "memory" in path.name:
            hint = "the kernel already uses more RAM than the new limit: raise quotas.ram_mb"
        raise QuotaError(f"cannot write {value.strip()!r} to {path}: {exc.strerror}", hint) from exc


class TenantCgroup:
    """The cgroup ``nika-tenant-{id}`` of one tenant, in every hierarchy ``support`` names."""

    def __init__(self, tenant_id: str, support: CgroupSupport) -> None:
        self.tenant_id = tenant_id
        self.support = support
        self.name = f"nika-tenant-{tenant_id}"

    @property
    def dirs(self) -> dict[str, Path]:
        """Controller → this tenant's directory."""
        return {k: v / self.name for k, v in self.support.dirs.items()}

    def apply(self, cpu_percent: int, ram_mb: int) -> dict[str, int]:
        """Create the cgroup(s) and write the limits; return what the kernel reads back.

        Raises:
            QuotaError: No cgroup support, or a limit cannot be written.
        """
        if self.support.mode is CgroupMode.NONE:
            raise QuotaError(f"no cgroup can limit kernels here: {self.support.reason}", FALLBACK)
        quota_us = cpu_percent * CFS_PERIOD_US // 100
        ram = ram_mb * MIB
        for path in self.dirs.values():
            path.mkdir(exist_ok=True)
        if self.support.mode is CgroupMode.V2:
            d = self.dirs["unified"]
            _write(d / "cpu.max", f"{quota_us} {CFS_PERIOD_US}\n")
            _write(d / "memory.max", f"{ram}\n")
        else:
            _write(self.dirs["cpu"] / "cpu.cfs_period_us", f"{CFS_PERIOD_US}\n")
            _write(self.dirs["cpu"] / "cpu.cfs_quota_us", f"{quota_us}\n")
            _write(self.dirs["memory"] / "memory.limit_in_bytes", f"{ram}\n")
        return self.read()

    def attach(self, pid: int) -> list[int]:
        """Move ``pid`` and its current descendants into the cgroup; return the pids moved."""
        pids = [pid, *descendants(pid)]
        for path in self.dirs.values():
            for p in pids:
                with contextlib.suppress(ProcessLookupError):
                    try:
                        _write(path / "cgroup.procs", f"{p}\n")
                    except QuotaError:
                        if Path(f"/proc/{p}").exists():
                            raise
        return pids

    def read(self) -> dict[str, int]:
        """Limits and usage as the kernel reports them (``-1``: unlimited / absent)."""

        def num(path: Path) -> int:
            try:
                raw = path.read_text().split()
            except OSError:
                return -1
            return -1 if not raw or raw[0] == "max" else int(raw[0])

        if self.support.mode is CgroupMode.V2:
            d = self.dirs["unified"]
            return {
                "cpu_quota_us": num(d / "cpu.max"),
                "cpu_period_us": CFS_PERIOD_US,
                "memory_limit_bytes": num(d / "memory.max"),
                "memory_usage_bytes": num(d / "memory.current"),
            }
        if self.support.mode is CgroupMode.V1:
            return {
                "cpu_quota_us": num(self.dirs["cpu"] / "cpu.cfs_quota_us"),
                "cpu_period_us": num(self.dirs["cpu"] / "cpu.cfs_period_us"),
                "memory_limit_bytes": num(self.dirs["memory"] / "memory.limit_in_bytes"),
                "memory_usage_bytes": num(self.dirs["memory"] / "memory.usage_in_bytes"),
            }
        return {}

    def procs(self) -> list[int]:
        """Pids in the tenant's cgroup (first hierarchy)."""
        for path in self.dirs.values():
            with contextlib.suppress(OSError):
                return [int(x) for x in (path / "cgroup.procs").read_text().split()]
        return []

    def remove(self) -> None:
        """Move any process left back to our own cgroup and delete the tenant's cgroup."""
        for controller, path in self.dirs.items():
            if not path.is_dir():
                continue
            parent = self.support.dirs[controller]
            with contextlib.suppress(OSError):
                for p in (path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        (parent / "cgroup.procs").write_text(f"{p}\n")
            try:
                path.rmdir()
            except OSError as exc:
                raise QuotaError(
                    f"cannot remove cgroup {path}: {exc.strerror}",
                    "stop the tenant's kernel first (`nika kernel stop T`)",
                ) from exc


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """Every live descendant of ``pid`` (from ``/proc/*/stat`` parent links)."""
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return sorted(out)
