"""The REST API (/api/v1/): thin DRF views over the audit domain's services and selectors."""
