"""The messaging bridge: WhatsApp Business, Microsoft Teams and Google Chat to tenant kernels.

``nika bridge serve`` (:mod:`nika_tui.bridge.server`) verifies each webhook, routes the sender
to its tenant (:mod:`nika_tui.domain.bridge`), queues the message durably
(:mod:`nika_tui.bridge.delivery`), types it into the tenant's kernel and sends the agent's
answer back through the same gateway (:mod:`nika_tui.bridge.kernel_delivery`). This package
file stays empty: the agent hooks import :mod:`nika_tui.services.bridge_keys` and must stay light.
"""
