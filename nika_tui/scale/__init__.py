"""Strategy B: scale-out workers on the tenant's cloud providers (issue 18).

``indicators`` and ``planner`` are pure (samples and clock passed in); ``providers`` holds one
adapter per cloud API; ``state`` is the durable record of plans and workers; ``actions`` applies,
decommissions and reconciles; ``sampler`` / ``scheduler`` run inside the memory service.
"""
