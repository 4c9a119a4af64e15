"""Bulk writes of model rows: on PostgreSQL through COPY into a temporary stage table and one INSERT … SELECT …
ON CONFLICT, elsewhere (SQLite, `make run`) through Django's bulk_create.

Django's bulk_create quotes each value of a batch in Python (its UNNEST arrays, client-side binding): on the
300,000-page scale audit, the finalize pass that writes ~290,000 deep-page issues spent 26 of its 35 s there
(cProfile); COPY adapts the values in psycopg's C code. The stage is one temporary table per connection, model and
column set (a connection that outlives a migration makes a new one instead of copying into the old shape), emptied
at each commit and after each batch.

Rows the caller knows are new, and that no other transaction can be inserting meanwhile, can skip the stage:
`fresh=True` copies them straight into the table (one statement instead of four, and the rows written once). The
crawl's batches know it: they hold their URLs' frontier rows locked and have just looked their pages up.

Public interface:
- rows_insert(model, objs, update_fields=None, fresh=False): insert unsaved instances whose primary key is set; a
  row already there is kept as it is, or has `update_fields` replaced
- issues_insert(issues, fresh=False) -> int: Issue rows (a replayed one is kept), streamed in batches of
  ISSUE_WRITE_BATCH
- rows_stored(model, ids) -> set: which of these primary keys the table holds
"""

import itertools
import json
import zlib
from collections.abc import Iterable
from functools import cache

from django.db import connection, models, transaction
from django.utils import timezone

from audits.limits import ISSUE_WRITE_BATCH
from audits.models import Issue


def rows_insert(
    model: type[models.Model], objs: list, *, update_fields: list[str] | None = None, fresh: bool = False
) -> None:
    """Insert `objs` (instances of `model` with their primary key set). A row whose key exists is left alone, or,
    given `update_fields`, has those fields replaced (a replayed batch). Rows go in primary-key order, so two
    transactions writing the same rows take their locks in one order. Fields with auto_now or auto_now_add take
    the time of the call, as a save would.

    `fresh`: the caller knows no row with these keys exists, and holds what keeps any other transaction from
    inserting one until it commits; the rows are then copied straight into the table. (Keys repeated among `objs`
    still go through the stage, which keeps one of each.)"""
    if not objs:
        return
    if fresh and connection.vendor == "postgresql" and len({obj.pk for obj in objs}) == len(objs):
        shape = _shape(model, ())
        with connection.cursor() as cursor:
            _copy(cursor, shape, shape.table, objs)
        return
    if connection.vendor != "postgresql":
        if update_fields:
            model.objects.bulk_create(
                objs, update_conflicts=True, unique_fields=[model._meta.pk.name], update_fields=update_fields
            )
        else:
            model.objects.bulk_create(objs, ignore_conflicts=True)
        return
    shape = _shape(model, tuple(update_fields or ()))
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:  # the stage empties at commit
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {shape.stage} (LIKE {shape.table} INCLUDING DEFAULTS) "
            "ON COMMIT DELETE ROWS"
        )
        _copy(cursor, shape, shape.stage, objs)
        cursor.execute(
            f"INSERT INTO {shape.table} ({shape.columns}) SELECT {shape.columns} FROM {shape.stage} "
            f"ORDER BY {shape.pk} ON CONFLICT {shape.on_conflict}"
        )
        cursor.execute(f"DELETE FROM {shape.stage}")  # a second batch in the same transaction starts empty


def issues_insert(issues: Iterable[Issue], *, fresh: bool = False) -> int:
    """Insert `issues` ISSUE_WRITE_BATCH at a time as they come (a list of them all is never made); an issue
    already stored (its id is deterministic: a replay) is kept. Returns how many were given. `fresh` as for
    rows_insert: a batch holding an id an earlier batch of the call held goes through the stage too."""
    written, issues = 0, iter(issues)
    sent: set = set()  # with `fresh`: the ids of the batches so far
    while batch := list(itertools.islice(issues, ISSUE_WRITE_BATCH)):
        batch_fresh = fresh
        if fresh:
            ids = {issue.id for issue in batch}
            batch_fresh = sent.isdisjoint(ids)
            sent |= ids
        rows_insert(Issue, batch, fresh=batch_fresh)
        written += len(batch)
    return written


def rows_stored(model: type[models.Model], ids: list) -> set:
    """The primary keys among `ids` that `model`'s table holds."""
    return set(model.objects.filter(pk__in=ids).values_list("pk", flat=True)) if ids else set()


def _copy(cursor, shape: "_Shape", table: str, objs: list) -> None:
    """COPY `objs` into `table` (the model's or its stage), converting what COPY cannot take as it is."""
    now = timezone.now() if shape.stamped else None
    with cursor.cursor.copy(f"COPY {table} ({shape.columns}) FROM STDIN") as copy:
        attnames, converted = shape.attnames, shape.converted
        for obj in objs:
            row = [getattr(obj, name) for name in attnames]
            for i, convert in converted:
                row[i] = convert(row[i], now)
            copy.write_row(row)


class _Shape:
    """How one model's rows are copied: its table, stage, columns and a converter per value."""

    def __init__(self, model: type[models.Model], update_fields: tuple[str, ...]):
        fields = model._meta.concrete_fields
        q = connection.ops.quote_name
        self.table = q(model._meta.db_table)
        self.columns = ", ".join(q(f.column) for f in fields)
        self.pk = q(model._meta.pk.column)
        self.stage = f"{model._meta.db_table}_stage_{zlib.crc32(self.columns.encode()):08x}"
        self.attnames = [f.attname for f in fields]
        # (index, converter) of the values COPY cannot take as they are: JSON, and the times a save would set
        self.converted = [(i, convert) for i, f in enumerate(fields) if (convert := _converter(f)) is not None]
        self.stamped = any(_stamped(f) for f in fields)
        if update_fields:
            updated = ", ".join(f"{q(f.column)} = EXCLUDED.{q(f.column)}" for f in fields if f.name in update_fields)
            self.on_conflict = f"({self.pk}) DO UPDATE SET {updated}"
        else:
            self.on_conflict = "DO NOTHING"


@cache
def _shape(model: type[models.Model], update_fields: tuple[str, ...]) -> _Shape:
    return _Shape(model, update_fields)


def _converter(field: models.Field):
    """value, now -> what COPY writes for `field`; None where the value goes as it is (psycopg adapts text,
    numbers, UUIDs, times)."""
    if _stamped(field):
        return lambda value, now: now
    if isinstance(field, models.JSONField):
        encoder = field.encoder
        return lambda value, now: None if value is None else json.dumps(value, cls=encoder)
    return None


def _stamped(field: models.Field) -> bool:
    """A field a save sets to the current time (auto_now, auto_now_add)."""
    return getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
