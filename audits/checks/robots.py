"""Robots directives as the audit reads them from a page's meta robots tags and X-Robots-Tag header: the one reading
the page checks, the render checks, depth and the site checks share (a leaf: it imports nothing of the project)."""

# Robots directives that take a value ("max-snippet: 20"): not a user-agent prefix.
_VALUE_DIRECTIVES = frozenset(
    {"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after", "noimageindex", "notranslate"}
)
# User agents whose X-Robots-Tag directives the audit honours ("otherbot: noindex" is not ours).
_OUR_AGENTS = frozenset({"googlebot", "sitewarden", "*"})


def robots_directives(meta_robots: str, x_robots_tag: str) -> set[str]:
    """Directives that apply to us from <meta name=robots|googlebot> and X-Robots-Tag, lower-cased.

    "none" stands for noindex + nofollow. X-Robots-Tag directives after "otherbot:" are left out.
    """
    directives = {d.strip() for d in (meta_robots or "").lower().replace(";", ",").split(",") if d.strip()}
    agent = None
    for part in (x_robots_tag or "").lower().split(","):
        token = part.strip()
        if not token:
            continue
        name, sep, rest = token.partition(":")
        name = name.strip()
        if sep and name not in _VALUE_DIRECTIVES and " " not in name:
            agent, token = name, rest.strip()  # "googlebot: noindex": agent prefix, then a directive
            if not token:
                continue
        if agent is None or agent in _OUR_AGENTS:
            directives.add(token)
    if "none" in directives:
        directives |= {"noindex", "nofollow"}
    return directives
