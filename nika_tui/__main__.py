from __future__ import annotations

from nika_tui.cli import main

raise SystemExit(main())
