"""Every Redis key nika-os uses, in one place (seed: IPC + transactional layers).

Per-tenant keys embed the (validated) tenant id, so one tenant's keys never collide with
another's. Values are JSON strings unless stated.
"""

from __future__ import annotations

PREFIX = "nika"

# --- memory service -------------------------------------------------------------------------
INGEST_STREAM = f"{PREFIX}:ingest"
"""Stream of RememberRequest JSON (field ``req``); consumer group :data:`INGEST_GROUP`."""
INGEST_GROUP = "memory-service"
INGEST_DEAD = f"{PREFIX}:ingest:dead"
"""Stream of ingest entries refused by the service (fields ``req``, ``error``): kept, not lost."""


def ingest_done(tenant_id: str, idempotency_key: str) -> str:
    """List the service RPUSHes one JSON ingest outcome onto (a waiting writer BLPOPs it)."""
    return f"{PREFIX}:ingest:done:{tenant_id}:{idempotency_key}"


RPC_STREAM = f"{PREFIX}:rpc"
"""Stream of read requests (fields ``id``, ``op``, ``body``); replies go to :func:`rpc_reply`."""
RPC_GROUP = "memory-service"
SERVICE_HEARTBEAT = f"{PREFIX}:service:heartbeat"
"""String with TTL, refreshed by the running memory service (value: pid)."""
TENANT_ALARMS = f"{PREFIX}:service:tenant_alarms"
"""Hash: tenant id → JSON ``{reason, hint, kind, since}`` of a tenant whose store failed: the
service parked its ingest (entries stay pending). Read by the dashboard and ``nika doctor``."""
WRITES_PAUSED = f"{PREFIX}:service:writes_paused"
"""String (JSON ``{op, tenant_id, stage, since, pid, host}``, a TTL as a bound): a fresh start
of ``tenant_id`` is running, so that tenant's memory writes wait in the stream until it ends;
the other tenants' go on (decision 505). Set and cleared by :func:`nika_tui.engine.reset.reset`;
read by the dashboard's status bar."""
ACTIVE_REFS = f"{PREFIX}:rag:active_refs"
"""Hash: field ``{tenant_id}:{memory_id}`` → JSON ``{session_id: expires_epoch}`` (seed name)."""
ENTITY_FEED = f"{PREFIX}:entity_feed"
"""Stream of entity events (ingested, retired, purged) for live views."""


def rpc_reply(request_id: str) -> str:
    """List the service LPUSHes one JSON reply onto (the caller BLPOPs with a timeout)."""
    return f"{PREFIX}:rpc:reply:{request_id}"


def semaphore(name: str) -> str:
    """Sorted set of holders for a counting semaphore."""
    return f"{PREFIX}:sem:{name}"


# --- per tenant -----------------------------------------------------------------------------
def tenant_key(tenant_id: str, suffix: str) -> str:
    """``nika:tenant:{tenant_id}:{suffix}``."""
    return f"{PREFIX}:tenant:{tenant_id}:{suffix}"


def kernel_state(tenant_id: str) -> str:
    """Hash: state, state_source, pid, cli, started_at, last_event, last_event_at, …"""
    return tenant_key(tenant_id, "kernel")


def kernel_heartbeat(tenant_id: str) -> str:
    """String with TTL; absent = stale kernel."""
    return tenant_key(tenant_id, "kernel:heartbeat")


def working_memory(tenant_id: str) -> str:
    """Hash: fill_percent, tokens, window, format, transcript, updated_at, forecast_s."""
    return tenant_key(tenant_id, "wm")


def fill_history(tenant_id: str) -> str:
    """Stream of fill samples (fields ``at``, ``fill``, ``tokens``)."""
    return tenant_key(tenant_id, "wm:history")


def compactions(tenant_id: str) -> str:
    """Stream of compaction events (fields ``at``, ``trigger``, ``fill``)."""
    return tenant_key(tenant_id, "wm:compactions")


def pod_ttfl(tenant_id: str) -> str:
    """List of pod_ttfl samples in seconds (newest first, trimmed)."""
    return tenant_key(tenant_id, "pod_ttfl")


def query_log(tenant_id: str) -> str:
    """Stream of recalls: query, filters, returned ids and scores (the debt audit reads it)."""
    return tenant_key(tenant_id, "querylog")


def review_queue(tenant_id: str) -> str:
    """Hash: review id → JSON of an UNCERTAIN pair (durable with AOF)."""
    return tenant_key(tenant_id, "review")


def review_refs(tenant_id: str, memory_id: str) -> str:
    """Set: ids of the review items that name ``memory_id`` (old or new side)."""
    return tenant_key(tenant_id, f"review_refs:{memory_id}")


def confirmations(tenant_id: str) -> str:
    """Hash: confirmation id → JSON of an action waiting for a human (escalate mode)."""
    return tenant_key(tenant_id, "confirmations")


def debt_history(tenant_id: str) -> str:
    """Stream of audit runs (field ``report`` JSON)."""
    return tenant_key(tenant_id, "debt:history")


def recall_tuning(tenant_id: str) -> str:
    """Hash of recall settings the debt actions set: ``recency_weight``, ``recency_tau_days``
    (boost_recency), ``tighten_scope`` = ``1`` (tighten_scope), ``updated_at``."""
    return tenant_key(tenant_id, "recall:tuning")


def judge_audit(tenant_id: str) -> str:
    """String: JSON of the latest judge agreement report (the audit_judge_prompt action)."""
    return tenant_key(tenant_id, "judge:audit")


def debt_noop(tenant_id: str, action: str) -> str:
    """String: memory counts when an approved debt ``action`` last changed nothing.

    The audit does not queue that action again while the counts are the same (issue 17).
    """
    return tenant_key(tenant_id, f"debt:noop:{action}")


def autonomous_reset(tenant_id: str) -> str:
    """String: JSON ``{at, indicators, generation}`` of the last autonomous fresh start.

    Deleted by the first audit that no longer suggests strategy A (the reset worked). While it
    is held, the audit does not reset again within ``reset_cooldown_days``, and a trigger still
    in alert after it escalates to a person instead (issue 22).
    """
    return tenant_key(tenant_id, "reset:autonomous")


def spawn_diagnosis(tenant_id: str) -> str:
    """String: JSON of the latest spawn diagnosis (the diagnose_spawn action)."""
    return tenant_key(tenant_id, "spawn:diagnosis")


def ingest_paused(tenant_id: str) -> str:
    """String flag: bulk ingestion paused after a critical debt level (value: reason)."""
    return tenant_key(tenant_id, "ingest:paused")


def metrics(tenant_id: str) -> str:
    """Hash of counters (ingested, retired, recalls, palace_misses, …)."""
    return tenant_key(tenant_id, "metrics")


def hooks_fired(tenant_id: str) -> str:
    """Stream of agent hook events (fields ``at``, ``cli``, ``event``, ``session_id``), trimmed."""
    return tenant_key(tenant_id, "hooks")


def rem_judged(tenant_id: str) -> str:
    """Set of ``{old_id}>{new_id}`` pairs the REM pass already re-judged (never judged twice)."""
    return tenant_key(tenant_id, "rem:judged")


def handoff_packet(tenant_id: str, session_id: str) -> str:
    """String with TTL: the *pending* handoff packet of one agent session (PreCompact writes
    it; it is committed only when the compaction happened, and the next PreCompact replaces a
    packet whose compaction was refused)."""
    return tenant_key(tenant_id, f"handoff:{session_id}")


def handoff_latest(tenant_id: str, session_id: str) -> str:
    """String with TTL: the newest *committed* packet of one session (``StoredPacket`` JSON)."""
    return tenant_key(tenant_id, f"handoff-latest:{session_id}")


def handoff_project(tenant_id: str, project_id: str) -> str:
    """String with TTL: the newest committed packet of a project, any session or CLI."""
    return tenant_key(tenant_id, f"handoff-project:{project_id or '-'}")


def agent_sessions(tenant_id: str) -> str:
    """Hash: kernel window (``claude-code``, ``codex``, …) → its agent's open session (JSON:
    session id, hook CLI, transcript, cwd), written by the hooks run inside the kernel and
    removed at SessionEnd; what the kernel watcher hands off when the agent dies without one."""
    return tenant_key(tenant_id, "agent-sessions")


def session_context(tenant_id: str, session_id: str) -> str:
    """Set with TTL: what this agent context was already given (memory ids, packet keys), so
    nothing is injected twice; emptied when the context is compacted."""
    return tenant_key(tenant_id, f"session-context:{session_id}")


# --- strategy B (issue 18) -----------------------------------------------------------------
SCALE_SAMPLES = f"{PREFIX}:scale:samples"
"""List of host samples (JSON, newest first, trimmed) written by the service's scale sampler."""


def tokens_day(tenant_id: str, day: str) -> str:
    """Integer: model tokens the tenant consumed on ``day`` (``YYYYMMDD``, UTC), from billing."""
    return tenant_key(tenant_id, f"tokens:{day}")


def cost_day(tenant_id: str, day: str) -> str:
    """Float: estimated cost of the tokens of ``day`` (price table currency), from billing."""
    return tenant_key(tenant_id, f"cost:{day}")


def quota_state(tenant_id: str) -> str:
    """Hash: ``warned_day``, ``limited_day``, ``paused_pid`` of the token quota watcher."""
    return tenant_key(tenant_id, "quota")


# --- nika import (issue 21) -----------------------------------------------------------------
def import_keys(tenant_id: str) -> str:
    """Set: idempotency keys of every memory ``nika import`` has queued for the tenant."""
    return tenant_key(tenant_id, "import:keys")


def import_files(tenant_id: str) -> str:
    """Hash: source file → fingerprint (size:mtime) once all its memories are queued."""
    return tenant_key(tenant_id, "import:files")
