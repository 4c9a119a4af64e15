"""Structured-data checks: the rich-result types Google documents, each entity's required and recommended
properties against what the page's JSON-LD, microdata or RDFa gives (crawler.parse extracts the entities with
their property names; invalid JSON-LD is `invalid-structured-data` in audits/checks/page.py).

RICH_RESULT_PROPERTIES is a small table from Google Search Central's structured-data docs
(developers.google.com/search/docs/appearance/structured-data/*). A requirement is a tuple of alternatives:
Product needs `name` and one of `offers`, `review`, `aggregateRating`.
"""

EXAMPLES_MAX = 5  # entities listed in one issue

RICH_RESULT_PROPERTIES: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {
    # Article: Google requires nothing, recommends these.
    "Article": {
        "required": (),
        "recommended": (("author",), ("datePublished",), ("dateModified",), ("headline",), ("image",)),
    },
    "Product": {
        "required": (("name",), ("offers", "review", "aggregateRating")),
        "recommended": (("image",), ("description",), ("brand",), ("sku", "gtin", "mpn")),
    },
    "BreadcrumbList": {"required": (("itemListElement",),), "recommended": ()},
    "FAQPage": {"required": (("mainEntity",),), "recommended": ()},
    "Organization": {"required": (), "recommended": (("name",), ("url",), ("logo",))},
    "LocalBusiness": {
        "required": (("name",), ("address",)),
        "recommended": (("telephone",), ("url",), ("geo",), ("openingHoursSpecification", "openingHours"), ("image",)),
    },
    "Event": {
        "required": (("name",), ("startDate",), ("location",)),
        "recommended": (("description",), ("endDate",), ("image",), ("offers",), ("organizer",), ("eventStatus",)),
    },
    "Recipe": {
        "required": (("name",), ("image",)),
        "recommended": (
            ("author",),
            ("datePublished",),
            ("description",),
            ("recipeIngredient",),
            ("recipeInstructions",),
            ("totalTime",),
            ("recipeYield",),
        ),
    },  # fmt: skip
    "VideoObject": {
        "required": (("name",), ("thumbnailUrl",), ("uploadDate",)),
        "recommended": (("description",), ("duration",), ("contentUrl", "embedUrl")),
    },
}
# Subtypes Google treats as their parent type.
SUBTYPES = {
    "NewsArticle": "Article",
    "BlogPosting": "Article",
    "Restaurant": "LocalBusiness",
    "Store": "LocalBusiness",
    "Dentist": "LocalBusiness",
    "MedicalBusiness": "LocalBusiness",
    "ProfessionalService": "LocalBusiness",
    "FoodEstablishment": "LocalBusiness",
    "Corporation": "Organization",
    "NGO": "Organization",
}


def rich_type(type_name: str) -> str | None:
    """The table's type for an entity's @type ("BlogPosting" -> "Article"), or None when not a rich-result type."""
    name = SUBTYPES.get(type_name, type_name)
    return name if name in RICH_RESULT_PROPERTIES else None


def missing_properties(type_name: str, properties) -> tuple[list[str], list[str]]:
    """(required, recommended) properties an entity of `type_name` lacks; alternatives are shown "a|b"."""
    table = RICH_RESULT_PROPERTIES[type_name]
    present = set(properties)
    required = ["|".join(alts) for alts in table["required"] if not present.intersection(alts)]
    recommended = ["|".join(alts) for alts in table["recommended"] if not present.intersection(alts)]
    return required, recommended


def structured_data_page_checks(data, add) -> None:
    """One issue per kind (required, recommended) per page, listing the entities that lack properties."""
    lacking: dict[str, list[dict]] = {"required": [], "recommended": []}
    for item in data.structured_items:
        table_type = rich_type(item["type"])
        if table_type is None:
            continue
        required, recommended = missing_properties(table_type, item["properties"])
        for kind, missing in (("required", required), ("recommended", recommended)):
            if missing:
                lacking[kind].append({"type": item["type"], "syntax": item["syntax"], "missing": missing})
    if lacking["required"]:
        add(
            "structured-data-missing-required",
            entities_count=len(lacking["required"]),
            entities=lacking["required"][:EXAMPLES_MAX],
        )
    if lacking["recommended"]:
        add(
            "structured-data-missing-recommended",
            entities_count=len(lacking["recommended"]),
            entities=lacking["recommended"][:EXAMPLES_MAX],
        )
