"""Who refreshes a table (issue 48/49): the lease holder's name carries the principal whose token the process's
catalog client uses, as the real catalog server's ``whoami`` maps it, so the card's and ``%mt``'s "refreshed by"
name the principal beside the process."""

from __future__ import annotations

import uuid
from typing import Any

from mt_magic.runtime.manager.lease_keeper import catalog_principal, holder_id


def test_the_holder_names_the_principal_the_catalog_token_maps_to(catalog_server: Any) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    from mt_magic.catalog.access import AccessClient

    admin_catalog = RestCatalog("principal_admin", uri=catalog_server.uri, token=catalog_server.token)
    name = f"rex{uuid.uuid4().hex[:6]}"
    token = AccessClient(admin_catalog).request("POST", "principals", {"name": name})["token"]
    rex = RestCatalog("principal_rex", uri=catalog_server.uri, token=token)
    assert catalog_principal(rex) == name
    assert f" as {name} (" in holder_id("kernel", catalog_principal(rex))
    assert " as " not in holder_id("kernel")
    assert catalog_principal(admin_catalog) not in (None, name)
