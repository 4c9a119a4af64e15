"""Image checks. One page at a time: <img> without width and height (layout shifts), alt text over the threshold.
In finalize: broken images (4xx/5xx or no answer) and images over the size threshold, read from the answers the
image pass (audits.pipeline.images, the stage that asks the site) got for the audit's image URLs. No network here.
"""

from collections.abc import Iterator

from audits.checks.registry import CheckSettings, make_issue
from audits.models import Issue

EXAMPLES_MAX = 5  # image srcs listed in one issue
IMAGE_SITE_TYPES = ("broken-image", "image-too-large")


def image_page_checks(data, add, limit) -> None:
    if data.images_missing_size:
        add(
            "image-missing-size",
            images_missing_size=data.images_missing_size,
            images_total=data.images_total,
            srcs=data.images_missing_size_srcs[:EXAMPLES_MAX],
        )
    max_chars = limit("image-alt-too-long", "max_chars")
    long_alts = sorted((item for item in data.image_alts if item[1] > max_chars), key=lambda item: -item[1])
    if long_alts:
        add(
            "image-alt-too-long",
            images_count=len(long_alts),
            max_chars=max_chars,
            images=[{"src": src, "alt_chars": chars} for src, chars in long_alts[:EXAMPLES_MAX]],
        )


def image_site_issues(audit_id, pages, answers: dict, settings: CheckSettings) -> Iterator[Issue]:
    """One issue per page and type, listing its broken or too large images, from the image pass's `answers`
    (url -> {"status_code", "bytes", "error"}); yielded as the pages stream in. Not capped, and not held: a broken
    logo in the template is an issue on every page (held as a list, 300,000 of them took the worker +577 MiB)."""
    if not answers:
        return
    max_kb = settings.threshold("image-too-large", "max_kb")
    max_bytes = max_kb * 1024

    rows = pages.exclude(image_urls=[]).order_by("url").values_list("id", "url", "image_urls").iterator()
    for page_id, page_url, image_urls in rows:
        broken, large = [], []
        for src in image_urls or []:
            answer = answers.get(src)
            if answer is None:
                continue
            status = answer["status_code"]
            if answer["error"] or status is None or status >= 400:
                broken.append({"src": src, "status_code": status, "error": answer["error"]})
            elif answer["bytes"] is not None and answer["bytes"] > max_bytes:
                large.append({"src": src, "kb": round(answer["bytes"] / 1024)})
        found = []
        if broken and settings.enabled("broken-image"):
            found.append(("broken-image", {"images_count": len(broken), "images": broken[:EXAMPLES_MAX]}))
        if large and settings.enabled("image-too-large"):
            found.append(
                ("image-too-large", {"images_count": len(large), "max_kb": max_kb, "images": large[:EXAMPLES_MAX]})
            )
        for issue_type, details in found:
            issue = make_issue(
                audit_id, issue_type, page_id=page_id, page_url=page_url, details=details, settings=settings
            )
            if issue is not None:
                yield issue
