"""The OpenAPI schema and the interactive docs, served without a CDN."""

from django.contrib.staticfiles import finders
from django.test import Client


def test_schema_is_openapi_3_with_the_bearer_scheme(db):
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        **schema["components"]["securitySchemes"]["bearerAuth"],
        "type": "http",
        "scheme": "bearer",
    }
    start = schema["paths"]["/api/v1/projects/{id}/audits/"]["post"]["responses"]
    assert {"202", "400", "402", "403", "404", "409", "429"} <= set(start)
    assert "application/problem+json" in start["409"]["content"]


def test_docs_use_local_assets(db):
    for url, asset in (
        ("/api/docs/", "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
        ("/api/redoc/", "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    ):
        response = Client().get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert "/static/" + asset in html
        assert "cdn." not in html and "jsdelivr" not in html
        assert finders.find(asset), asset
