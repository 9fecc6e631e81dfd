"""Help: keys and screens."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# nika-os dashboard

**Overview** — one row per tenant: kernel state (and whether a *hook* or the *pane* decided
it), CLI, context fill with the **61%** compaction mark (`│`) and the time until it is reached,
the worst memory-debt metric, review-queue and confirmation counts, heartbeat age.
A `●` marks a tenant that needs you.

| key | action |
|---|---|
| `enter` | tenant detail (live pane, fill history, memory, strategies) |
| `s` / `x` / `R` | spawn / stop / restart the kernel |
| `a` | attach: the dashboard steps aside; detach (`C-b d`) to come back |
| `d` | memory debt (`r` runs the audit now) |
| `v` | review queue (`a` replace, `k` keep both, `s` skip, `space` mark, `A`/`K` batch) |
| `p` | purge plan (`c` apply: type the tenant id to confirm) |
| `c` | confirmations waiting for you (`a` approve, `x` reject, `t` this tenant / all) |
| `b` | bus / log tail (filters: tenant, action_type, domain) |
| `/` | recall in the selected tenant's memory |
| `f` / `n` / `o` | filter by state / needs me / change sort (or click a header) |
| `ctrl+p` | command palette: every action, per tenant too; *Theme* changes the theme |
| `escape` | back |
| `q` | quit |

When Redis or the memory service is down the status bar says so and the dashboard keeps
polling: it recovers by itself once they are back (`nika up`).
"""


class HelpScreen(ModalScreen[None]):
    """Keys and screens."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Close"),
        Binding("question_mark", "app.pop_screen", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
