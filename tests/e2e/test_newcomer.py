"""The newcomer's path, as the README tells it: clone, `make run`, the wizard, "A first session".

Driven in a real tmux pane on a private socket, with a fresh HOME and a PATH of only the system
directories plus ``~/.local/bin`` (where ``make run`` links ``nika``), so a command the README
gives that is not on PATH fails here as it failed for the person in issue 17.

Every line of "A first session" is typed as written, `nika setup` included (the welcome
button only opens the wizard and leaves it with Ctrl-C).

What is *not* cold: the dependencies. A cold install downloads torch and ~130 wheels (minutes,
network); the clone's ``.venv`` is instead a venv whose ``.pth`` puts the clone first and the
test's own site-packages after it, and its ``.installed`` stamp is fresh, so ``make run`` skips
the four pip steps and runs everything after them for real: ``make install`` (the symlink and
the PATH note), ``.venv/bin/nika``, the welcome screen, the wizard. The first-session commands
are parsed from README.md, so the test fails when the README drifts from what works.

The ``export PATH=…`` line ``make install`` prints when ``~/.local/bin`` is off PATH is checked
on its own: ``nika`` is not found in a fresh shell without it, and runs with it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from nika_tui.paths import tenants_dir
from tests.helpers import retry_until

pytestmark = [
    pytest.mark.tmux,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs the tmux binary"),
    pytest.mark.skipif(shutil.which("make") is None, reason="needs make"),
]

REPO = Path(__file__).resolve().parents[2]
DONE = "__NIKA_STEP_DONE__"


def _matches(search: Callable[[str], object], screen: str) -> bool:
    return search(screen) is not None


def first_session_commands(readme: str) -> list[str]:
    """The commands of the README's "A first session" block, comments dropped."""
    block = readme.split("A first session:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def _reuse_venv(clone: Path) -> None:
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    paths = [str(clone)] + [p for p in sys.path if p.endswith("site-packages")]
    lib = next((venv / "lib").iterdir()) / "site-packages"
    (lib / "00-newcomer.pth").write_text("\n".join(dict.fromkeys(paths)) + "\n")
    entry = venv / "bin" / "nika"
    entry.write_text(
        f"#!{venv}/bin/python\nimport sys\nfrom nika_tui.cli import main\nsys.exit(main())\n"
    )
    entry.chmod(0o755)
    (venv / ".installed").touch()  # newer than pyproject.toml and requirements.lock


@pytest.fixture
def pane(tmp_path: Path, isolated_env: dict[str, str]) -> Iterator[list[str]]:
    tmux = ["tmux", "-L", isolated_env["NIKA_TMUX_SOCKET"]]
    home = tmp_path / "home"
    home.mkdir()
    system_path = ":".join(
        d for d in (str(Path(shutil.which("tmux") or "").parent), "/usr/local/bin", "/usr/bin",
                    "/bin", str(Path(shutil.which("git") or "/usr/bin/git").parent)) if d
    )  # fmt: skip
    env = {
        **isolated_env,
        "HOME": str(home),
        "PATH": f"{home}/.local/bin:{system_path}",
        "TERM": "xterm-256color",
        "PS1": "$ ",
    }
    setenv = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "newcomer", "-x", "160", "-y", "50", *setenv,
         "bash", "--norc", "--noprofile"],
        check=True,
    )  # fmt: skip
    yield tmux
    subprocess.run(
        [*tmux, "send-keys", "-t", "newcomer", "C-c", "nika down --redis", "Enter"], check=False
    )
    retry_until(lambda: "nika-core" not in _sessions(tmux), timeout=30, what="nika down")
    subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)


def _sessions(tmux: list[str]) -> str:
    return subprocess.run([*tmux, "ls"], capture_output=True, text=True).stdout


def _screen(tmux: list[str]) -> str:
    out = subprocess.run(
        [*tmux, "capture-pane", "-p", "-J", "-S", "-200", "-t", "newcomer"],
        capture_output=True,
        text=True,
    )
    return out.stdout


def _keys(tmux: list[str], *keys: str) -> None:
    subprocess.run([*tmux, "send-keys", "-t", "newcomer", *keys], check=True)


def _wait_for(
    tmux: list[str], ready: Callable[[str], bool], what: str, timeout: float = 60.0
) -> str:
    def probe() -> str | None:
        screen = _screen(tmux)
        return screen if ready(screen) else None

    try:
        return retry_until(probe, timeout=timeout, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the pane:\n{_screen(tmux)}") from None


def _wait(tmux: list[str], needle: str, timeout: float = 60.0) -> str:
    return _wait_for(tmux, lambda screen: needle in screen, f"{needle!r} on screen", timeout)


def _alternate_screen(tmux: list[str]) -> bool:
    """True while a full-screen app (the dashboard) owns the pane."""
    out = subprocess.run(
        [*tmux, "display", "-p", "-t", "newcomer", "#{alternate_on}"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() == "1"


def _quit_dashboard(tmux: list[str]) -> None:
    retry_until(lambda: _alternate_screen(tmux), timeout=90, what="the dashboard on screen")
    _keys(tmux, "q")
    retry_until(lambda: not _alternate_screen(tmux), timeout=60, what="the dashboard gone")


def _answer(tmux: list[str], prompt: str, *keys: str) -> None:
    _wait(tmux, prompt)
    _keys(tmux, *keys)


def test_readme_first_session_in_a_fresh_clone(
    pane: list[str], tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    tmux = pane
    clone = tmp_path / "nika-os"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    _reuse_venv(clone)
    commands = first_session_commands((clone / "README.md").read_text(encoding="utf-8"))
    assert commands[0] == "nika setup" and commands[1] == "nika up"

    _keys(tmux, f"cd {clone} && make run", "Enter")
    _wait(tmux, "Set up a tenant")
    assert (tmp_path / "home" / ".local" / "bin" / "nika").is_symlink()
    # The welcome button opens the wizard; Ctrl-C leaves it with nothing written and the
    # dashboard comes back. The tenant is then made as the README says, by typing its line.
    _keys(tmux, "Enter")  # the focused button: the wizard
    _answer(tmux, "Tenant id", "C-c")
    # The wizard's "nothing was written" line shows only until the dashboard redraws over it
    # (under load, before a poll could see it): the welcome back and no tenant file say it.
    _wait(tmux, "Try the demo tenant")
    tenants = tenants_dir(isolated_env)  # where the pane's nika writes (its env is this one)
    assert not list(tenants.glob("*/config.yaml"))
    _quit_dashboard(tmux)
    # As the README says: when ~/.local/bin is not on PATH, `make run` prints the line to run.
    # (In this pane tmux's PATH wins over the session's; a person's login shell varies too.)
    note = re.search(r'export PATH="[^"]+"', _screen(tmux))
    if note is not None:
        _keys(tmux, note.group(0), "Enter")

    # The button's "Tenant id" must not be taken for this wizard's: start from an empty pane.
    _keys(tmux, "clear", "Enter")
    subprocess.run([*tmux, "clear-history", "-t", "newcomer"], check=True)
    _keys(tmux, commands[0], "Enter")  # `nika setup`, exactly as the README writes it
    _answer(tmux, "Tenant id", "acme", "Enter")  # the suggested id is in brackets, not typed
    _answer(tmux, "Display name", "Enter")
    _answer(tmux, "Language", "Enter")
    _answer(tmux, "Plan level", "Enter")
    _answer(tmux, "Agent CLI for this tenant", "Enter")
    _answer(tmux, "Privacy mode", "Enter")  # local
    _answer(tmux, "Cloud providers", "Enter")
    _answer(tmux, "Knowledge repository", "Enter")
    for label in ("auto-scale", "auto-compress", "auto-purge", "auto-REM"):
        _answer(tmux, label, "Enter")
    _answer(tmux, "plan quotas", "Enter")
    _answer(tmux, "Write this configuration?", "Enter")
    _wait(tmux, "Wrote ")
    assert (tenants / "acme" / "config.yaml").is_file()  # the same place, now written
    _wait(tmux, "Next: `nika doctor`")

    outputs: dict[str, str] = {}
    for command in commands[1:]:
        if command.endswith("&& nika"):  # the dashboard: opened, seen, quit
            _keys(tmux, "clear", "Enter")
            _keys(tmux, command, "Enter")
            _wait(tmux, "acme", timeout=90)
            _quit_dashboard(tmux)
            continue
        _keys(tmux, "clear", "Enter")
        # A marker of this step's own: under load the screen can still show the previous
        # step's marker when this one is typed (`clear` not yet run), and a shared marker
        # made the wait return before the command had printed anything.
        done = f"{DONE}{len(outputs)}_"
        _keys(tmux, f"{command}; echo {done}$?", "Enter")
        finished = re.compile(re.escape(done) + r"\d").search
        screen = _wait_for(tmux, partial(_matches, finished), command, 180)
        assert f"{done}0" in screen, f"{command!r} failed:\n{screen}"
        outputs[command] = screen
    recall_staging = next(v for k, v in outputs.items() if "staging server?" in k)
    assert "staging-2.acme.internal" in recall_staging
    assert "staging-1.acme.internal" not in recall_staging.split("recall", 1)[-1]
    peru = next(v for k, v in outputs.items() if "Peru" in k)
    assert "no memory for" in peru


def test_the_path_line_make_install_prints_works_in_a_fresh_shell(tmp_path: Path) -> None:
    """`make install` with ``~/.local/bin`` off PATH prints an ``export PATH=…`` line; typed in a
    fresh shell (no rc file, the same PATH), it makes the README's ``nika`` a command there."""
    from nika_tui import __version__

    clone = tmp_path / "nika-os"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    _reuse_venv(clone)
    home = tmp_path / "home"
    home.mkdir()
    system_path = ":".join(
        dict.fromkeys(("/usr/local/bin", "/usr/bin", "/bin",
                       str(Path(shutil.which("make") or "/usr/bin/make").parent)))
    )  # fmt: skip
    env = {"HOME": str(home), "PATH": system_path, "LANG": "C.UTF-8"}
    made = subprocess.run(
        ["make", "install"], cwd=clone, env=env, capture_output=True, text=True, check=True
    )
    bindir = home / ".local" / "bin"
    assert (bindir / "nika").is_symlink(), made.stdout
    line = re.search(r'export PATH="[^"]+"', made.stdout)
    assert line is not None, f"no export line printed:\n{made.stdout}"

    def fresh_shell(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--norc", "--noprofile", "-c", script],
            cwd=home,  # not the clone: the command must not depend on where it is typed
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    before = fresh_shell("nika --version")
    assert before.returncode == 127, before  # command not found: the line is what fixes it
    after = fresh_shell(f"{line.group(0)}\ncommand -v nika\nnika --version")
    assert after.returncode == 0, after
    assert after.stdout.splitlines() == [str(bindir / "nika"), f"nika-os {__version__}"]
