"""A stand-in agent CLI for tests, benchmarks and demos of the kernel machinery.

It is a protocol-level double of an interactive agent CLI: it runs in a terminal, redraws its
screen like the real ones do, and shows the same three faces the pane patterns look for — an
input prompt (idle), a spinner with "esc to interrupt" (working), and a numbered permission
question (waiting-input). It reads one line at a time from its terminal:

- ``work``      → shows a spinner until the next line arrives (``done`` or anything else);
- ``ask``       → asks "Do you want to proceed?" and waits for the answer line;
- ``/compact``  → answers "Conversation compacted" (what nika's compaction policy types);
- ``/exit``, ``/quit`` or end of input → prints "bye" and exits 0;
- anything else is echoed back.

With ``--claude-hooks`` it also runs the hooks Claude Code would run, read from
``$CLAUDE_CONFIG_DIR/settings.json`` (``hooks`` → event → ``[{hooks: [{command, timeout}]}]``)
and run with a shell, the JSON payload on stdin: ``UserPromptSubmit`` with the ``prompt``
before an echoed line, ``Stop`` with ``last_assistant_message`` (the echo) after it.

Run it with ``python -m nika_tui.assets.standin_agent`` (or this file's path).
``--exit-at-once CODE`` prints a fatal error and exits with CODE immediately (a CLI that cannot
start); ``--name`` changes the banner.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence

CLEAR = "\x1b[H\x1b[2J"
KEEP = 6  # log lines kept on screen


class StandinAgent:
    """The screen and the command loop."""

    def __init__(self, name: str, claude_hooks: bool = False) -> None:
        self.name = name
        self.log: list[str] = []
        self.claude_hooks = claude_hooks
        self.session_id = str(uuid.uuid4())

    def _hooks(self, event: str, payload: dict[str, object]) -> None:
        """Run the event's hooks as Claude Code does: shell command, JSON on stdin."""
        if not self.claude_hooks:
            return
        path = os.path.join(os.environ.get("CLAUDE_CONFIG_DIR", ""), "settings.json")
        try:
            with open(path, encoding="utf-8") as fh:
                groups = json.load(fh).get("hooks", {}).get(event, [])
        except (OSError, ValueError):
            return
        body = {"session_id": self.session_id, "transcript_path": "", "cwd": os.getcwd(),
                "hook_event_name": event, **payload}  # fmt: skip
        for group in groups:
            for hook in group.get("hooks", []):
                if hook.get("type") == "command" and hook.get("command"):
                    subprocess.run(
                        ["/bin/sh", "-c", hook["command"]], input=json.dumps(body), text=True,
                        capture_output=True, timeout=float(hook.get("timeout", 60)), check=False,
                    )  # fmt: skip

    def _draw(self, *body: str) -> None:
        out = [f"{self.name} · nika-os stand-in agent · pid {os.getpid()} · {os.getcwd()}", ""]
        out.extend(self.log[-KEEP:])
        out.append("")
        out.extend(body)
        sys.stdout.write(CLEAR + "\n".join(out) + "\n")
        sys.stdout.flush()

    def _read(self, prompt: str) -> str | None:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
        return None if line == "" else line.rstrip("\r\n")

    def run(self) -> int:
        """The read–answer loop; returns the exit status."""
        while True:
            self._draw("? for shortcuts")
            line = self._read("> ")
            if line is None or line.strip() in ("/exit", "/quit"):
                sys.stdout.write("\nbye\n")
                sys.stdout.flush()
                return 0
            command = line.strip()
            if command == "work":
                self._draw("✻ Working… (esc to interrupt)")
                done = self._read("")
                self.log.append(f"⏺ finished work ({done or 'no more input'})")
                if done is None:
                    return 0
            elif command == "ask":
                self._draw("Do you want to proceed?", "❯ 1. Yes", "  2. No")
                answer = self._read("")
                self.log.append(f"⏺ answer: {answer or ''}")
                if answer is None:
                    return 0
            elif command == "/compact":
                self.log.append("⏺ Conversation compacted (stand-in agent)")
            elif command:
                self._hooks("UserPromptSubmit", {"prompt": command})
                self.log.append(f"⏺ echo: {command}")
                self._draw("? for shortcuts")
                self._hooks("Stop", {"stop_hook_active": False,
                                     "last_assistant_message": f"echo: {command}"})  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="standin_agent", description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="standin", help="banner name")
    parser.add_argument(
        "--exit-at-once",
        type=int,
        metavar="CODE",
        default=None,
        help="print a fatal error and exit with CODE immediately",
    )
    parser.add_argument(
        "--claude-hooks", action="store_true", help="run Claude Code's hooks from its settings"
    )
    parser.add_argument("extra", nargs="*", help="ignored words (printed in the banner log)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.exit_at_once is not None:
        print(f"{args.name}: fatal: cannot start (asked to exit at once)", file=sys.stderr)
        return int(args.exit_at_once)
    agent = StandinAgent(args.name, claude_hooks=args.claude_hooks)
    if args.extra:
        agent.log.append("⏺ argv: " + repr(args.extra))
    try:
        return agent.run()
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
