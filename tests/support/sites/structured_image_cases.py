"""Page cases of issue 14c: structured data (JSON-LD, microdata, RDFa) and image attributes."""

import json

from tests.support.sites.pages import Case, html_route, page


def _jsonld(data: dict) -> str:
    return f'<script type="application/ld+json">{json.dumps({"@context": "https://schema.org", **data})}</script>'


PRODUCT_COMPLETE = {
    "@type": "Product", "name": "Kettle", "image": "https://x.test/k.png", "description": "A kettle.",
    "brand": {"@type": "Brand", "name": "Acme"}, "sku": "K1", "offers": {"@type": "Offer", "price": "20"},
}  # fmt: skip
ARTICLE_COMPLETE = {
    "@type": "BlogPosting", "headline": "News", "author": {"@type": "Person", "name": "A"}, "image": "/a.png",
    "datePublished": "2026-01-01", "dateModified": "2026-01-02",
}  # fmt: skip
MICRODATA_EVENT = '<div itemscope itemtype="https://schema.org/Event"><span itemprop="name">Concert</span>{more}</div>'
RDFA_RECIPE = '<div vocab="https://schema.org/" typeof="Recipe"><span property="name">Soup</span>{more}</div>'
LONG_ALT = "A very long description of a picture " * 3  # 111 characters once collapsed


def structured_image_cases() -> list[Case]:
    """Structured data (JSON-LD, microdata, RDFa) and image attributes: each planted, with a clean twin."""
    ok = html_route
    c = Case
    sd = {"structured-data-missing-required", "structured-data-missing-recommended"}
    event_more = (
        '<span itemprop="startDate">2026-05-01</span><span itemprop="location">Hall</span>'
        '<span itemprop="description">Music</span><span itemprop="endDate">2026-05-02</span>'
        '<span itemprop="image">/e.png</span><span itemprop="offers">Free</span>'
        '<span itemprop="organizer">Us</span><span itemprop="eventStatus">EventScheduled</span>'
    )
    recipe_more = (
        '<img property="image" src="/soup.png" alt="Soup" width="10" height="10"><span property="author">A</span>'
        '<span property="datePublished">2026</span><span property="description">Hot</span>'
        '<span property="recipeIngredient">Water</span><span property="recipeInstructions">Boil</span>'
        '<span property="totalTime">PT1H</span><span property="recipeYield">2</span>'
    )
    return [
        c(
            "sd-product-lacking",
            ok(page("sd-product-lacking", head=_jsonld({"@type": "Product", "description": "Only words"}))),
            sd,
        ),
        c("sd-product-complete", ok(page("sd-product-complete", head=_jsonld(PRODUCT_COMPLETE))), set(), sd),
        c(
            "sd-article-headline-only",
            ok(page("sd-article-headline-only", head=_jsonld({"@type": "NewsArticle", "headline": "News"}))),
            {"structured-data-missing-recommended"},
            {"structured-data-missing-required"},
        ),
        c("sd-article-complete", ok(page("sd-article-complete", head=_jsonld(ARTICLE_COMPLETE))), set(), sd),
        c(
            "sd-microdata-event-lacking",
            ok(page("sd-microdata-event-lacking", body=MICRODATA_EVENT.format(more=""))),
            {"structured-data-missing-required"},
        ),
        c(
            "sd-microdata-event-complete",
            ok(page("sd-microdata-event-complete", body=MICRODATA_EVENT.format(more=event_more))),
            set(),
            sd,
        ),
        c(
            "sd-rdfa-recipe-lacking",
            ok(page("sd-rdfa-recipe-lacking", body=RDFA_RECIPE.format(more=""))),
            {"structured-data-missing-required"},
        ),
        c(
            "sd-rdfa-recipe-complete",
            ok(page("sd-rdfa-recipe-complete", body=RDFA_RECIPE.format(more=recipe_more))),
            set(),
            sd,
        ),
        # Images: width/height, alt length (threshold 100 characters)
        c(
            "img-no-size",
            ok(page("img-no-size", body='<img src="/static/a.png" alt="A" width="10">')),
            {"image-missing-size"},
        ),
        c(
            "img-sized",
            ok(page("img-sized", body='<img src="/static/a.png" alt="A" width="10" height="10">')),
            set(),
            {"image-missing-size", "image-alt-too-long"},
        ),
        c(
            "img-alt-long",
            ok(page("img-alt-long", body=f'<img src="/static/b.png" alt="{LONG_ALT}" width="1" height="1">')),
            {"image-alt-too-long"},
            {"image-missing-size"},
        ),
        c(
            "img-alt-100",
            ok(page("img-alt-100", body=f'<img src="/static/b.png" alt="{"x" * 100}" width="1" height="1">')),
            set(),
            {"image-alt-too-long"},
        ),
    ]
