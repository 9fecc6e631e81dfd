"""The REM pass: consolidate a tenant's memory while its agents sleep (seed 2, « Pourquoi dormir »).

Steps, in this order (each plans first, journals its plan, then applies it op by op):

1. ``obsolete`` — retire current memories whose job or task the YAML hierarchy marks
   ``obsolete`` or ``cancelled`` (the golden rule: status comes from the hierarchy).
2. ``promote`` — an episodic fact repeated in two or more sessions (episodic memories of one
   project at cosine > 0.92 with distinct ``session_id``) becomes one semantic memory (the
   best-sourced text, entities/files/tools merged); the episodic copies are retired, superseded
   by it. Promotion runs before merging so the repetition is seen before anything is merged.
3. ``merge`` — near-duplicates (same layer and project, cosine > 0.92, and no contradiction
   between them by the rules parser) are merged: the best-sourced one is kept — the most
   entity/files/tools metadata, then the newest valid time, then the smallest id — and the
   others are retired, superseded by it.
4. ``rejudge`` — pairs of current memories above the supersede candidate threshold (cosine
   ≥ 0.50, same layer and project) that were never judged (not in the review queue, not
   re-judged by an earlier pass) go to the tenant's judge (``judge_for``: its privacy mode):
   REPLACE retires the older, UNCERTAIN queues a review, KEEP changes nothing.

The pass never deletes (it only retires and adds), is idempotent (a second run finds nothing
to do), and journals every step in ``{data}/tenants/{t}/rem/journal.jsonl`` (0600, fsync'd):
``start`` → per step ``plan`` (every op) → ``op`` (each op done) → ``step`` → ``end``. A pass
killed mid-way is *resumed* by the next run: the unfinished step's remaining ops are applied
(every op is idempotent), the old run is closed, and a fresh pass follows.

Base set: memories asserted in the last ``window`` (the day's sessions, default 24 h);
neighbours can be any current memory. ``window=None`` takes every current memory.

Modules: :mod:`.plan` (each step's ops), :mod:`.run` (a pass), :mod:`.journal`, :mod:`.schedule`
(when the service runs a pass by itself, the ``rem.run`` op).
"""
