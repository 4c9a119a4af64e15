"""The crawl chunks' own rows: which run holds each (a lease generation), when it last renewed, when its message
was sent."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from scratchpad.models import CrawlChunk
from scratchpad.services.frontier import frontier_renew

ChunkState = CrawlChunk.State
SESSION_NAME_MAX_CHARS = 63  # PostgreSQL keeps application_name to NAMEDATALEN - 1 bytes (the names are ASCII)


def chunk_session_name(*, lease_key: str, generation: int) -> str:
    """The database session name of the run holding `generation` of a chunk (pg_stat_activity.application_name)."""
    return f"sitewarden-chunk {lease_key} g{generation}"[:SESSION_NAME_MAX_CHARS]


def chunk_session_claim(*, lease_key: str, generation: int) -> None:
    """Name this connection's database session after the run that now holds the chunk, so that whoever finds the
    run dead can end what it left open (chunk_holder_sessions_end)."""
    if connection.vendor != "postgresql":
        return
    name = chunk_session_name(lease_key=lease_key, generation=generation)
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('application_name', %s, false)", [name])


def chunk_holder_sessions_end(*, lease_key: str, generation: int) -> int:
    """End the database sessions that a run which stopped renewing its lease left inside a transaction; returns
    how many. A run paused between statements is ended by PostgreSQL after a lease (idle_in_transaction_session_
    timeout), but one paused in the middle of a COPY is an active statement waiting for its client, which no timeout
    of PostgreSQL ends: its row locks would hold every other writer of the audit (seen: a chunk waiting 240 s on
    a SIGSTOPped worker's COPY). The run is fenced already (its generation is past); its session goes too, and the
    run, if it resumes, finds its connection closed and writes nothing. Only sessions of this database: another on
    the same server (a staging copy of it, another test slot) may hold runs of the same name."""
    if connection.vendor != "postgresql":
        return 0
    name = chunk_session_name(lease_key=lease_key, generation=generation)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s AND state <> 'idle' "
            "AND xact_start IS NOT NULL AND pid <> pg_backend_pid()",
            [name],
        )
        return cursor.fetchone()[0]


def chunk_register(*, audit_id, round_no: int, chunks: list[tuple[str, int]]) -> None:
    """Record a round's chunks (lease key, quota) as queued, before their messages are sent. Idempotent."""
    now = timezone.now()
    CrawlChunk.objects.bulk_create(
        [CrawlChunk(audit_id=audit_id, lease_key=k, round_no=round_no, quota=q, sent_at=now) for k, q in chunks],
        ignore_conflicts=True,
    )


@dataclass(frozen=True)
class ChunkTake:
    generation: int | None  # this run's generation, or None: not taken
    held_for_s: float = 0.0  # > 0: another run renewed it this recently; it is free once the lease runs out


def chunk_begin(*, audit_id, lease_key: str, round_no: int, quota: int, lease_s: int) -> ChunkTake:
    """Take a chunk for this run (a new generation), unless it is done or another run holds it (renewed within
    `lease_s`: then how long until it is free). A chunk nobody registered (the in-process runner) is
    registered here. Taking over a run that stopped renewing ends the sessions it left open."""
    now = timezone.now()
    replaced = None
    with transaction.atomic():
        CrawlChunk.objects.bulk_create(
            [CrawlChunk(audit_id=audit_id, lease_key=lease_key, round_no=round_no, quota=quota, sent_at=now)],
            ignore_conflicts=True,
        )
        chunk = CrawlChunk.objects.select_for_update().get(audit_id=audit_id, lease_key=lease_key)
        if chunk.state == ChunkState.DONE:
            return ChunkTake(None)
        if chunk.state == ChunkState.RUNNING and chunk.renewed_at is not None:
            free_at = chunk.renewed_at + timedelta(seconds=lease_s)
            if free_at > now:
                return ChunkTake(None, held_for_s=(free_at - now).total_seconds())
        if chunk.state == ChunkState.RUNNING:
            replaced = chunk.generation
        chunk.state, chunk.generation, chunk.renewed_at = ChunkState.RUNNING, chunk.generation + 1, now
        chunk.save(update_fields=["state", "generation", "renewed_at"])
    if replaced:
        chunk_holder_sessions_end(lease_key=lease_key, generation=replaced)
    return ChunkTake(chunk.generation)


def chunk_renew(*, audit_id, lease_key: str, generation: int, lease_s: int) -> bool:
    """The holding run's heartbeat: renew the chunk and the URLs it still holds. False when the run lost the
    chunk (taken over, or purged because the audit ended): it must stop writing."""
    with transaction.atomic():
        renewed = CrawlChunk.objects.filter(
            audit_id=audit_id, lease_key=lease_key, generation=generation, state=ChunkState.RUNNING
        ).update(renewed_at=timezone.now())
        if renewed:
            frontier_renew(audit_id=audit_id, lease_key=lease_key, lease_gen=generation, lease_s=lease_s)
    return bool(renewed)


def chunk_finish(*, audit_id, lease_key: str, generation: int) -> bool:
    """Mark the chunk done, if this run still holds it."""
    return bool(
        CrawlChunk.objects.filter(
            audit_id=audit_id, lease_key=lease_key, generation=generation, state=ChunkState.RUNNING
        ).update(state=ChunkState.DONE, renewed_at=timezone.now())
    )


def chunk_abandon(*, audit_id, lease_key: str, generation: int) -> None:
    """A run that stops on an error hands the chunk back at once, so its retry may take it again."""
    CrawlChunk.objects.filter(
        audit_id=audit_id, lease_key=lease_key, generation=generation, state=ChunkState.RUNNING
    ).update(state=ChunkState.QUEUED, renewed_at=None)


def chunk_mark_resent(*, chunk: CrawlChunk) -> bool:
    """Note a re-send of a chunk's message; conditional on the last send, so two sweeps send it once."""
    return bool(
        CrawlChunk.objects.filter(id=chunk.id, sent_at=chunk.sent_at, state=chunk.state).update(
            sent_at=timezone.now(), sends=F("sends") + 1
        )
    )
