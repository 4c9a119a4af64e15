"""The crawl chunks' own rows: which run holds each (a lease generation), when it last renewed, when its message
was sent."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from scratchpad.models import CrawlChunk
from scratchpad.services.frontier import frontier_renew

ChunkState = CrawlChunk.State


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
    registered here."""
    now = timezone.now()
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
        chunk.state, chunk.generation, chunk.renewed_at = ChunkState.RUNNING, chunk.generation + 1, now
        chunk.save(update_fields=["state", "generation", "renewed_at"])
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
