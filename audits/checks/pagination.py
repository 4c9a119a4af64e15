"""Pagination checks (site, in finalize) over the rel="next"/"prev" links stored on each page (Page.rel_next,
Page.rel_prev): sequences whose pages do not name each other back, targets that are not indexable 2xx pages,
and rel="next" chains that come back on themselves.

Only targets the audit crawled are judged: a target outside the crawl's scope says nothing either way.
Memory grows with the pages that carry a rel="next"/"prev" (two URLs each), never with all pages.
"""

from audits.models import Page

SQL_IN_BATCH = 900  # values per IN (...) list
LOOP_URLS_LISTED = 10  # URLs of a loop named in its issue


def _targets(audit_id, urls) -> dict:
    found = {}
    urls = sorted(set(urls))
    for start in range(0, len(urls), SQL_IN_BATCH):
        rows = Page.objects.filter(audit_id=audit_id, url__in=urls[start : start + SQL_IN_BATCH]).values(
            "url", "status_code", "is_indexable", "rel_next", "rel_prev"
        )
        for row in rows:
            found[row["url"]] = row
    return found


def pagination_checks(audit, out, pages, enabled) -> None:
    """`pages`: the audit's judged pages (refusals excluded); `out`: the site checks' issue writer."""
    linked = list(
        pages.exclude(rel_next="", rel_prev="").order_by("url").values_list("id", "url", "rel_next", "rel_prev")
    )
    if not linked:
        return
    targets = _targets(audit.id, [u for _, _, n, p in linked for u in (n, p) if u])
    for page_id, url, rel_next, rel_prev in linked:
        for rel, target, back_rel in (("next", rel_next, "rel_prev"), ("prev", rel_prev, "rel_next")):
            row = targets.get(target) if target else None
            if row is None:
                continue
            ok = row["status_code"] is not None and 200 <= row["status_code"] < 300 and row["is_indexable"]
            if not ok and enabled("pagination-url-not-ok"):
                out.add(
                    "pagination-url-not-ok",
                    page_id=page_id,
                    page_url=url,
                    dedupe_key=rel,
                    rel=rel,
                    target=target,
                    status_code=row["status_code"],
                    indexable=row["is_indexable"],
                )
            elif ok and row[back_rel] != url and enabled("pagination-broken-sequence"):
                out.add(
                    "pagination-broken-sequence",
                    page_id=page_id,
                    page_url=url,
                    dedupe_key=rel,
                    rel=rel,
                    target=target,
                    target_points_to=row[back_rel] or None,
                    expected_rel=back_rel.replace("rel_", ""),
                )
    if enabled("pagination-loop"):
        _loops(out, {url: rel_next for _, url, rel_next, _ in linked if rel_next}, {url: i for i, url, _, _ in linked})


def _loops(out, next_of: dict[str, str], page_ids: dict[str, object]) -> None:
    """Each rel="next" cycle once, reported on its first URL in sort order (a functional graph: one walk per
    start, every URL visited once overall)."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    for start in sorted(next_of):
        if start in state:
            continue
        walk = []
        url = start
        while url in next_of and url not in state:
            state[url] = 1
            walk.append(url)
            url = next_of[url]
        if state.get(url) == 1:  # came back to this walk: the cycle is the walk from `url` on
            cycle = walk[walk.index(url) :]
            first = min(cycle)
            out.add(
                "pagination-loop",
                page_id=page_ids.get(first),
                page_url=first,
                loop_length=len(cycle),
                urls=cycle[cycle.index(first) :][:LOOP_URLS_LISTED],
            )
        for seen in walk:
            state[seen] = 2
