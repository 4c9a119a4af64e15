"""The one write path of a project's segments: create, change, delete. The dashboard's form, the API and the admin
call these through audits.services (an import-linter contract keeps the faces out of this module); the fields are
judged by audits.segments.segment_validate, the check the form's preview runs too, and a refusal is SegmentInvalid."""

from django.db import IntegrityError, transaction
from django.db.models import IntegerField, Max

from audits.models import Project, Segment
from audits.segments import MAX_SEGMENTS_PER_PROJECT, SegmentInvalid, segment_validate


@transaction.atomic
def segment_create(*, project: Project, name, kind, value, extractor="", position=None) -> Segment:
    """A new segment of the project, last in its order unless `position` says otherwise."""
    Project.objects.select_for_update().filter(id=project.id).first()  # one count-and-insert at a time
    if Segment.objects.filter(project=project).count() >= MAX_SEGMENTS_PER_PROJECT:
        raise SegmentInvalid(
            "invalid_segment", f"A project has at most {MAX_SEGMENTS_PER_PROJECT} segments.", field="name"
        )
    fields = segment_validate(
        project=project, name=name, kind=kind, value=value, extractor=extractor, position=position
    )
    if fields["position"] is None:
        last = Segment.objects.filter(project=project).aggregate(m=Max("position", output_field=IntegerField()))["m"]
        fields["position"] = 0 if last is None else last + 1
    try:
        with transaction.atomic():
            return Segment.objects.create(project=project, **fields)
    except IntegrityError:
        raise SegmentInvalid(
            "segment_name_taken", f"This project already has a segment named “{fields['name']}”.", field="name"
        ) from None


@transaction.atomic
def segment_update(*, segment: Segment, **changes) -> Segment:
    """The segment with `changes` (any of name, kind, value, extractor, position) applied, checked as a whole."""
    unknown = set(changes) - {"name", "kind", "value", "extractor", "position"}
    if unknown:
        raise SegmentInvalid("invalid_segment", f"Unknown fields: {', '.join(sorted(unknown))}.", field=None)
    current = {k: getattr(segment, k) for k in ("name", "kind", "value", "extractor", "position")}
    fields = segment_validate(project=segment.project, instance=segment, **{**current, **changes})
    if fields["position"] is None:
        fields["position"] = segment.position
    for key, value in fields.items():
        setattr(segment, key, value)
    try:
        with transaction.atomic():
            segment.save()
    except IntegrityError:
        raise SegmentInvalid(
            "segment_name_taken", f"This project already has a segment named “{fields['name']}”.", field="name"
        ) from None
    return segment


def segment_delete(*, segment: Segment) -> None:
    segment.delete()
