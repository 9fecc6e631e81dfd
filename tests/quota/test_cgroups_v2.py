"""cgroup v2, which this machine cannot run (its cpu and memory controllers are bound to v1):
detection and the limits written, on a stand-in of the kernel's interface (a ``/proc`` with
``mountinfo`` and ``self/cgroup`` as the kernel writes them, and a cgroup2 directory with the
interface files). The v1 path runs on the real cgroups in ``test_cgroups.py``."""

from __future__ import annotations

from pathlib import Path

from nika_tui.quota.cgroups import CFS_PERIOD_US, MIB, CgroupMode, TenantCgroup, detect

OWN = "system.slice/nika.service"


def _host(tmp_path: Path, controllers: str, subtree: str) -> tuple[Path, Path]:
    """A ``/proc`` naming a cgroup2 mount at ``tmp_path/cg``; our own cgroup in it."""
    proc, mount = tmp_path / "proc", tmp_path / "cg"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(
        "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
        f"30 25 0:26 / {mount} rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n"
    )
    (proc / "self" / "cgroup").write_text(f"0::/{OWN}\n")
    own = mount / OWN
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text(controllers + "\n")
    (own / "cgroup.subtree_control").write_text(subtree + "\n")
    return proc, own


def test_a_delegated_v2_cgroup_is_used_under_our_own_and_gets_the_limits(tmp_path: Path) -> None:
    proc, own = _host(tmp_path, "cpuset cpu io memory pids", "cpu memory")
    support = detect(proc)
    assert support.mode is CgroupMode.V2
    assert support.dirs == {"unified": own}  # under our own cgroup, never the root
    group = TenantCgroup("acme", support)
    limits = group.apply(cpu_percent=150, ram_mb=256)
    assert (own / "nika-tenant-acme" / "cpu.max").read_text() == f"150000 {CFS_PERIOD_US}\n"
    assert (own / "nika-tenant-acme" / "memory.max").read_text() == f"{256 * MIB}\n"
    assert limits["cpu_quota_us"] == 150000 and limits["memory_limit_bytes"] == 256 * MIB


def test_v2_without_delegation_says_so_and_falls_back(tmp_path: Path) -> None:
    proc, own = _host(tmp_path, "cpuset cpu io memory pids", "pids")
    support = detect(proc)
    assert support.mode is CgroupMode.NONE
    assert f"cgroup v2 at {own}: cpu+memory not delegated" in support.reason
    assert "no cgroup v1 cpu hierarchy mounted" in support.reason
    assert support.as_dict()["fallback"]
