"""Kernels: one tmux session ``nika-tenant-{tenant_id}`` per tenant, running its agent CLI.

:class:`.manager.KernelManager` spawns, watches, stops (:mod:`.stopping`) and restarts them;
:mod:`.compaction` applies the 61% compaction policy, :mod:`.confirmations` resolves the
decisions waiting for a person, :mod:`.hook_install` merges nika's hooks into the agents'
settings. The adapters they drive stay in :mod:`nika_tui.services` (``tmux_sessions``,
``kernel_launch``, ``kernel_store``).
"""
