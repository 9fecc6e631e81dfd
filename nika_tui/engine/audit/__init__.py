"""The memory-debt audit: every metric of seed 1 measured from the real stores, per tenant.

Sources: the vector store (one inventory scroll per layer + Qdrant neighbour searches on a
random sample, :mod:`.inventory`), the ``query_log`` stream (recent recalls, :mod:`.queries`),
the bus files (sizes, purges), the ``pod_ttfl`` list, the ``compactions`` stream, and a second
judge run on recently judged pairs (:mod:`.metrics`); :mod:`.measure` puts them together and
:mod:`.history` reads past runs back. Acting on a report (recording it, the auto-actions, the
critical-level pause) is :mod:`nika_tui.engine.debt.run`.

Cost at 413,000 points: one payload scroll (linear, no vectors) and ``sample_size`` dense
searches; nothing quadratic.
"""
