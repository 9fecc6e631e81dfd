"""Judges behind the :class:`nika_tui.domain.ports.Judge` port.

``rules`` lives in :mod:`nika_tui.domain.judge_rules` (pure); the adapters here talk to an
agent CLI (:mod:`.agent_cli`) or an OpenAI-compatible endpoint (:mod:`.http`);
:mod:`.factory` picks one per tenant, obeying its privacy mode.
"""

from __future__ import annotations

from nika_tui.services.judges.factory import JudgeSelection, judge_by_name, judge_for, select_judge

__all__ = ["JudgeSelection", "judge_by_name", "judge_for", "select_judge"]
