from __future__ import annotations

import sys

# A hook runs before every prompt: its entry imports only what it needs (nika_tui.hookd).
if sys.argv[1:2] == ["hook"]:
    from nika_tui.hookd.client import is_fast_call
    from nika_tui.hookd.client import main as hook_main

    if is_fast_call(sys.argv[1:]):
        raise SystemExit(hook_main(sys.argv[2:]))

from nika_tui.cli import main

raise SystemExit(main())
