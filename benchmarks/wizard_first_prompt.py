"""The wizard's first prompt: time from the person's action to "Tenant id" on screen (issue 17).

Two actions, each in a real tmux pane on a private socket with fresh config/data dirs:

- ``spawn``: typing ``nika setup`` (the README's line): time from the command's Enter to the
  "Tenant id" prompt being visible in the pane;
- ``button``: the dashboard's welcome screen is up, Enter presses its focused "Set up a tenant"
  button: time from that key to the prompt.

Interleaved run by run with ``python -c pass`` typed in the same pane (time to its echo
marker), the floor of any Python command there under the same load; ``ratio_to_floor_p50``
divides each action's median by the floor's. The pane is polled with
``capture-pane`` every 10 ms, so each time is late by at most that plus one tmux round trip.
Bytecode is cached (one warm-up run first), as in an installed package. Prints JSON, writes
``benchmarks/results/wizard_first_prompt.json``.

    .venv/bin/python benchmarks/wizard_first_prompt.py [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Tenant id"
POLL_S = 0.01


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(times: list[float]) -> dict[str, float]:
    return {
        "p50_s": round(statistics.median(times), 3),
        "p95_s": round(_pct(times, 0.95), 3),
        "max_s": round(max(times), 3),
    }


class Pane:
    """One tmux pane on a private socket, running bash with the given environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.tmux = ["tmux", "-L", env["NIKA_TMUX_SOCKET"]]
        setenv = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", *setenv,
             "bash", "--norc", "--noprofile"],
            check=True,
        )  # fmt: skip

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", "bench", *keys], check=True)

    def screen(self) -> str:
        out = subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", "bench"], capture_output=True, text=True
        )
        return out.stdout

    def wait(self, needle: str, timeout: float = 120.0) -> float:
        """Seconds until ``needle`` is on screen (raises after ``timeout``)."""
        start = time.perf_counter()
        while needle not in self.screen():
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"{needle!r} not on screen:\n{self.screen()}")
            time.sleep(POLL_S)
        return time.perf_counter() - start

    def alternate_screen(self) -> bool:
        """True while a full-screen app (the dashboard) owns the pane."""
        out = subprocess.run(
            [*self.tmux, "display", "-p", "-t", "bench", "#{alternate_on}"],
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() == "1"

    def until(self, ready: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        start = time.perf_counter()
        while not ready():
            if time.perf_counter() - start > timeout:
                raise TimeoutError(f"{what}:\n{self.screen()}")
            time.sleep(POLL_S)

    def clear(self) -> None:
        """Back to an empty shell prompt. Keys typed while a Ctrl-C'd program is still ending
        are lost, so the ready marker is re-sent until the shell echoes it."""
        self.keys("C-c")
        for _ in range(30):
            marker = f"__ready_{uuid.uuid4().hex[:6]}"
            self.keys("C-u", f"clear; echo {marker[:2]}''{marker[2:]}", "Enter")
            try:
                self.wait(marker + "\n", timeout=2.0)
                return
            except TimeoutError:
                continue
        raise TimeoutError(f"the shell never came back:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, check=False)


def _timed_command(pane: Pane, command: str, needle: str) -> float:
    pane.clear()
    pane.keys(command)
    pane.keys("Enter")
    return pane.wait(needle)


def _floor(pane: Pane) -> float:
    marker = f"__floor_{uuid.uuid4().hex[:6]}"
    cmd = f"{shlex.quote(sys.executable)} -c pass; echo {marker[:2]}''{marker[2:]}"
    return _timed_command(pane, cmd, marker + "\n")


def _button(pane: Pane, nika: str) -> float:
    pane.clear()
    pane.keys(f"{nika}", "Enter")
    pane.wait("Set up a tenant")
    pane.keys("Enter")  # the focused button: the wizard
    start = time.perf_counter()
    pane.wait(PROMPT)
    elapsed = time.perf_counter() - start
    pane.keys("C-c")  # ends the wizard, nothing written; the dashboard comes back
    pane.until(lambda: pane.alternate_screen(), "the dashboard back")
    pane.keys("q")
    pane.until(lambda: not pane.alternate_screen(), "the dashboard gone")
    return elapsed


def run(runs: int) -> dict[str, object]:
    """Time both actions and the floor ``runs`` times each, interleaved."""
    tmp = Path(tempfile.mkdtemp(prefix="nika-bench-wizard-"))
    env = {
        "HOME": str(tmp / "home"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "NIKA_OS_CONFIG_DIR": str(tmp / "config"),
        "NIKA_OS_DATA_DIR": str(tmp / "data"),
        "NIKA_TMUX_SOCKET": f"nika-bench-{uuid.uuid4().hex[:10]}",
        "HF_HUB_OFFLINE": "1",
        "TERM": "xterm-256color",
        "PS1": "$ ",
    }
    (tmp / "home").mkdir()
    nika = shlex.quote(str(Path(sys.executable).parent / "nika"))
    pane = Pane(env)
    times: dict[str, list[float]] = {"floor": [], "spawn": [], "button": []}
    try:
        _timed_command(pane, f"{nika} setup", PROMPT)  # warm-up: bytecode, page cache
        for _ in range(runs):
            times["floor"].append(_floor(pane))
            times["spawn"].append(_timed_command(pane, f"{nika} setup", PROMPT))
            times["button"].append(_button(pane, nika))
        pane.clear()
        pane.keys(f"{nika} down --redis", "Enter")
    finally:
        pane.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, object] = {name: _summary(values) for name, values in times.items()}
    floor = statistics.median(times["floor"])
    # The ratio to a bare `python -c pass` in the same pane: what the load cannot explain.
    result["ratio_to_floor_p50"] = {
        name: round(statistics.median(times[name]) / floor, 2) for name in ("spawn", "button")
    }
    result.update(
        runs=runs,
        load_1m_after=round(os.getloadavg()[0], 2),
        cores=os.cpu_count(),
        target_s=1.0,
        raw_s={name: [round(v, 3) for v in values] for name, values in times.items()},
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    load_before = round(os.getloadavg()[0], 2)
    result = {"load_1m_before": load_before, **run(args.runs)}
    text = json.dumps(result, indent=2)
    print(text)
    out = ROOT / "benchmarks" / "results" / "wizard_first_prompt.json"
    out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
