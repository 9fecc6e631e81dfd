"""The ``agent-cli`` judge: the tenant's own agent CLI, run headless, answers the question.

- Claude Code: ``claude -p --output-format json``; the prompt on stdin; stdout is one JSON
  envelope whose ``result`` field holds the final message (``is_error`` flags a failed run).
- Codex: ``codex exec --sandbox read-only --skip-git-repo-check -``; ``-`` reads the prompt
  from stdin; progress goes to stderr and only the final agent message to stdout.

The facts travel on stdin, never on the command line (process listings show argv). The run
has a timeout and a scratch working directory so the agent reads no project files. Any
failure (missing binary, non-zero exit, timeout, unparsable output) is UNCERTAIN with the
reason: the pair then goes to the review queue, nothing is retired on a guess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from nika_tui.domain.judge_prompt import full_batch_prompt, full_prompt
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.services.judges.judgements import batch_judgements, one_judgement

AGENT_CLI_JUDGE_NAME = "agent-cli"
DEFAULT_TIMEOUT_S = 120.0


class CliFlavor(StrEnum):
    """Which output protocol the CLI speaks."""

    CLAUDE = "claude"
    CODEX = "codex"


EXECUTABLES: dict[CliFlavor, str] = {CliFlavor.CLAUDE: "claude", CliFlavor.CODEX: "codex"}


def command_for(flavor: CliFlavor, executable: str, model: str | None = None) -> list[str]:
    """The argv for one headless judgement (no fact text in it).

    Args:
        flavor: Claude Code or Codex.
        executable: Path or name of the binary.
        model: Optional model name passed with ``--model`` / ``-m``.

    Returns:
        The argument list.
    """
    if flavor is CliFlavor.CLAUDE:
        argv = [executable, "-p", "--output-format", "json"]
        if model:
            argv += ["--model", model]
        return argv
    argv = [executable, "exec", "--sandbox", "read-only", "--skip-git-repo-check"]
    if model:
        argv += ["-m", model]
    return [*argv, "-"]


def final_message(flavor: CliFlavor, stdout: str) -> tuple[str | None, str]:
    """Extract the model's final message from the CLI's stdout.

    Args:
        flavor: Which protocol stdout follows.
        stdout: Everything the CLI printed on stdout.

    Returns:
        ``(message, problem)``: the message, or ``None`` and why it could not be read.
    """
    if flavor is CliFlavor.CODEX:
        text = stdout.strip()
        return (text, "") if text else (None, "codex printed no final message")
    try:
        envelope = json.loads(stdout)
    except ValueError:
        return None, "claude did not print a JSON envelope"
    if not isinstance(envelope, dict):
        return None, "claude's JSON envelope is not an object"
    if envelope.get("is_error"):
        subtype = envelope.get("subtype", "error")
        return None, f"claude reported an error ({subtype})"
    result = envelope.get("result")
    if not isinstance(result, str):
        return None, "claude's JSON envelope has no 'result' text"
    return result, ""


@dataclass(slots=True)
class AgentCliJudge:
    """Judge through a headless agent CLI (see module docstring)."""

    flavor: CliFlavor
    executable: str | None = None
    """Binary to run; default: the flavor's name looked up on PATH at call time."""
    model: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Non-secret variables for the run (e.g. the tenant's CLAUDE_CONFIG_DIR)."""

    @property
    def name(self) -> str:
        """``agent-cli``."""
        return AGENT_CLI_JUDGE_NAME

    def _uncertain(self, reason: str) -> Judgement:
        return Judgement(Verdict.UNCERTAIN, f"{self.flavor.value}: {reason}", self.name)

    def argv(self) -> list[str] | None:
        """The command line that will run, or ``None`` when the binary is not found."""
        exe = self.executable or shutil.which(EXECUTABLES[self.flavor])
        return command_for(self.flavor, exe, self.model) if exe else None

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """Ask the CLI; any failure is UNCERTAIN with the reason.

        Args:
            old: The current memory.
            new: The incoming fact.

        Returns:
            The CLI's verdict and reason, or UNCERTAIN with what went wrong.
        """
        return one_judgement(self._run(full_prompt(old, new)), self.name, self._uncertain)

    def judge_batch(self, pairs: list[tuple[Fact, Fact]]) -> list[Judgement]:
        """Judge many pairs with one headless run (the cascade's LLM tier).

        Args:
            pairs: (old, new) facts.

        Returns:
            One judgement per pair; a failed run or a pair missing from the answer is
            UNCERTAIN with the reason.
        """
        if not pairs:
            return []
        answer = self._run(full_batch_prompt(pairs))
        return batch_judgements(answer, len(pairs), self.name, self._uncertain)

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str | None, str]:
        """One headless run for other callers (the LLM digest): ``(final message, "")`` or
        ``(None, why)``.

        The CLI keeps its own system prompt, so ``system`` leads the prompt on stdin, before
        ``user``; ``max_tokens`` is the CLI's to decide (neither CLI takes it headless).
        """
        del max_tokens
        return self._run(f"{system}\n\n{user}")

    def _run(self, prompt: str) -> tuple[str | None, str]:
        """Run the CLI with ``prompt`` on stdin: ``(final message, "")`` or ``(None, why)``."""
        argv = self.argv()
        if argv is None:
            return None, f"`{EXECUTABLES[self.flavor]}` is not on PATH"
        env = {**os.environ, **self.extra_env}
        try:
            with tempfile.TemporaryDirectory(prefix="nika-judge-") as scratch:
                proc = subprocess.run(
                    argv,
                    input=prompt,
                    capture_output=True,
                    text=True,
                    encoding="utf-8",
                    errors="replace",
                    timeout=self.timeout_s,
                    cwd=scratch,
                    env=env,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            return None, f"no answer within {self.timeout_s:g} s"
        except OSError as exc:
            return None, f"cannot run {argv[0]}: {exc.strerror or exc}"
        if proc.returncode != 0:
            tail = _last_line(proc.stderr) or _last_line(proc.stdout)
            return None, f"exited with status {proc.returncode}: {tail}"
        return final_message(self.flavor, proc.stdout)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def available(flavor: CliFlavor, path: str | None = None) -> str | None:
    """Where the flavor's binary is on ``path`` (default ``$PATH``), or ``None``."""
    return shutil.which(EXECUTABLES[flavor], path=path)


def flavors() -> Sequence[CliFlavor]:
    """The CLIs this judge can drive."""
    return tuple(CliFlavor)
