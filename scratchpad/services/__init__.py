"""Writes to the crawl state, by what they write:

- frontier.py: lease URLs to a chunk, give back what it did not do, record what it did (frontier_*)
- chunks.py: the crawl chunks' rows, who runs each and when it last renewed (chunk_*)
- skips.py: the URLs the trap rules refused and the identical-pages counters (they store, audits.pipeline.traps
  decides)
- records.py: the values they take and give (ClaimedURL, NewURL, Edge, FrontierCaps, BatchOutcome, ...)
"""

from scratchpad.services.chunks import (
    ChunkTake,
    chunk_abandon,
    chunk_begin,
    chunk_finish,
    chunk_holder_sessions_end,
    chunk_mark_resent,
    chunk_register,
    chunk_renew,
    chunk_session_claim,
)
from scratchpad.services.frontier import (
    frontier_claim,
    frontier_hold,
    frontier_mark_started,
    frontier_purge,
    frontier_record_batch,
    frontier_release,
    frontier_renew,
    frontier_seed,
    frontier_seed_sitemap,
    frontier_start_allowed,
)
from scratchpad.services.records import (
    BatchOutcome,
    ClaimedURL,
    Edge,
    FrontierCaps,
    InsertOutcome,
    NewURL,
    SkipFirst,
    batched,
)
from scratchpad.services.skips import ShapeCount, shape_texts_count, shape_texts_trap

__all__ = [
    "BatchOutcome", "ChunkTake", "ClaimedURL", "Edge", "FrontierCaps", "InsertOutcome", "NewURL", "ShapeCount",
    "SkipFirst", "batched", "chunk_abandon", "chunk_begin", "chunk_finish", "chunk_holder_sessions_end",
    "chunk_mark_resent", "chunk_register", "chunk_renew", "chunk_session_claim",
    "frontier_claim", "frontier_hold", "frontier_mark_started", "frontier_purge", "frontier_record_batch",
    "frontier_release", "frontier_renew", "frontier_seed", "frontier_seed_sitemap", "frontier_start_allowed",
    "shape_texts_count", "shape_texts_trap",
]  # fmt: skip
