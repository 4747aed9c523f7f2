"""Assertions on the REST catalog's wire format, shared by the catalog tests (imported by name)."""

from __future__ import annotations

import httpx


def error_of(response: httpx.Response, status: int, error_type: str) -> str:
    """Assert the ErrorModel shape, status and type; return the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["type"] == error_type
    assert body["error"]["code"] == status
    return body["error"]["message"]
