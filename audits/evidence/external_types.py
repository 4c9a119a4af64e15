"""The evidence of the external link checks (audits/checks/external.py): one row per (source page, target), and the
site-wide count of targets the cap or the time budget left unchecked."""

from audits.evidence.columns import UNIT_LINKS, UNIT_SITE, Evidence, detail, page

_LINK = (page("Source page"), detail("target_url", "Target"), detail("anchor_text", "Anchor text"))
_STATUS = detail("target_status_code", "Target status", "status_code")
_LINKS = detail("links", "Links on the page")


def _link(*columns) -> Evidence:
    return Evidence(UNIT_LINKS, (*_LINK, *columns, _LINKS), target="target_url")


EXTERNAL_EVIDENCE: dict[str, Evidence] = {
    "external-link-broken": _link(_STATUS, detail("final_url", "Redirected to")),
    "external-link-server-error": _link(_STATUS),
    "external-link-unreachable": _link(detail("outcome_label", "What failed"), detail("fetch_error", "Error")),
    "external-link-redirect-loop": _link(
        detail("outcome_label", "What happened"),
        detail("redirect_hops", "Redirects"),
        detail("final_url", "Loops back to / last URL"),
    ),
    "external-link-redirect-broken": _link(
        detail("final_url", "Redirects to"), _STATUS, detail("redirect_hops", "Redirects")
    ),
    "external-link-redirect-chain": _link(detail("redirect_hops", "Redirects"), detail("final_url", "Final URL")),
    "external-link-redirected": _link(detail("final_url", "Redirects to"), detail("redirect_hops", "Redirects")),
    "external-link-insecure": _link(detail("outcome_label", "Check result")),
    "external-link-unverified": _link(_STATUS, detail("fetch_error", "Why not verified")),
    "external-links-unchecked": Evidence(
        UNIT_SITE,
        (
            detail("unchecked", "Targets unchecked"),
            detail("targets", "External targets"),
            detail("checked", "Checked"),
            detail("reason", "Why"),
            detail("examples", "Examples"),
            detail("setting", "Setting that raises it"),
        ),
        detail_first=("unchecked", "targets"),
    ),
}
EXTERNAL_LINK_TYPES = tuple(t for t, spec in EXTERNAL_EVIDENCE.items() if spec.unit == UNIT_LINKS)
