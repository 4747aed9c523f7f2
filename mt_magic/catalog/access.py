"""The client side of a team catalog's principals, grants and audit (mt_magic's ``/v1/mt/…`` routes).

Everything goes through the catalog's own pyiceberg REST session (its token, its direct loopback connection), so the
command line (``python -m mt_magic.catalog principals|roles|grants|audit``), ``%mt audit`` and CREATE MATERIALIZED
TABLE's check speak as the same principal the kernel does. A catalog that is not mt_magic's server has none of these
routes: :func:`missing_grants` then answers nothing missing (that catalog refuses what it refuses at the commit).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from mt_magic.catalog.errors import NotGrantedError, not_granted
from mt_magic.catalog.privileges import ADMIN, Privilege, Securable, either, grant_command, namespace, table
from mt_magic.errors import CatalogError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

    from mt_magic.catalog.tables import MaterializedCatalog


@dataclass(frozen=True)
class Missing:
    """A grant the caller lacks, and who may give it."""

    privilege: Privilege
    on: Securable
    grantors: tuple[str, ...]


class AccessClient:
    """mt_magic's access and audit routes of one open pyiceberg REST catalog."""

    def __init__(self, catalog: Catalog) -> None:
        from pyiceberg.catalog.rest import RestCatalog

        if not isinstance(catalog, RestCatalog):
            raise CatalogError(f"catalog {catalog.name!r} is not a REST catalog: it has no principals or grants")
        self.catalog = catalog

    def send(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """One request to ``/v1/mt/<path>``, as the catalog's principal (requests' response)."""
        url = self.catalog.url(f"mt/{path}", prefixed=True)
        return self.catalog._session.request(method, url, json=body, params=params)

    def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """:meth:`send`, then the answer's JSON (``None`` for 204).

        Raises:
            NotGrantedError: 403 (the principal lacks a grant; the message names it and who may give it).
            CatalogError: any other refusal, with the server's message.
        """
        response = self.send(method, path, body, params)
        if response.status_code == 204:
            return None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code < 300 and answer is not None:
            return answer
        message = answer.get("error", {}).get("message") if isinstance(answer, dict) else None
        message = message or f"HTTP {response.status_code}: {response.text[:200]}"
        if response.status_code == 403:
            raise not_granted(message) or NotGrantedError(message)
        raise CatalogError(f"{method} /v1/mt/{path} refused by catalog {self.catalog.name!r}: {message}")

    def whoami(self) -> dict[str, Any]:
        return dict(self.request("GET", "whoami"))

    def missing(self, needs: Iterable[tuple[Privilege, Securable]]) -> list[Missing] | None:
        """What of ``needs`` this principal lacks; ``None`` when the catalog cannot be asked: any answer but
        mt_magic's (another server has no such route and says so its own way: 404, 400, …)."""
        wanted = [{"privilege": p.value, "on": on.to_json()} for p, on in needs]
        response = self.send("POST", "privileges", {"needs": wanted})
        try:
            answer = response.json() if response.status_code == 200 else None
            if not isinstance(answer, dict) or not isinstance(answer.get("missing"), list):
                return None
            return [
                Missing(Privilege(m["privilege"]), Securable.from_json(m["on"]), tuple(m["grantors"]))
                for m in answer["missing"]
            ]
        except (ValueError, KeyError, TypeError):
            return None

    def audit(
        self, *, table: str | None = None, principal: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": limit}
        if table:
            params["table"] = table
        if principal:
            params["principal"] = principal
        return list(self.request("GET", "audit", params=params)["entries"])


def missing_grants(catalog: Catalog, needs: Sequence[tuple[Privilege, Securable]]) -> list[Missing]:
    """What of ``needs`` the catalog's principal lacks (nothing for its admin); nothing on a catalog that is not
    mt_magic's server (it cannot be asked; it refuses what it refuses when the statement writes)."""
    from pyiceberg.catalog.rest import RestCatalog

    if not needs or not isinstance(catalog, RestCatalog):
        return []
    return AccessClient(catalog).missing(needs) or []


def refusal(statement: str, missing: Sequence[Missing], why: dict[Securable, str]) -> NotGrantedError:
    """The error of a statement refused before it wrote anything: every grant missing, and who may give each."""
    said = "; ".join(f"{m.privilege.value} on {m.on}{why.get(m.on, '')}" for m in missing)
    grantors = sorted({g for m in missing for g in m.grantors if g != ADMIN}) + [ADMIN]
    command = grant_command(missing[0].privilege, missing[0].on)
    return NotGrantedError(
        f"{statement}: this catalog's principal lacks {said}; nothing was written",
        fix=f"ask {either(grantors)} to grant it to one of your roles ({command})",
    )


def unrestricted(catalog: Catalog) -> bool:
    """Whether the catalog's principal may do everything as far as this client can tell: its admin, or a catalog
    that is not mt_magic's (which cannot be asked, and refuses what it refuses)."""
    from pyiceberg.catalog.rest import RestCatalog

    if not isinstance(catalog, RestCatalog):
        return True
    response = AccessClient(catalog).send("GET", "whoami")
    try:
        answer = response.json() if response.status_code == 200 else None
    except ValueError:
        return True
    return not (isinstance(answer, dict) and answer.get("admin") is False)


def check_create(catalog: MaterializedCatalog, statement: str, name: str, sources: Sequence[str]) -> None:
    """CREATE MATERIALIZED TABLE's grants, asked before anything is written: read-data on every source in this
    catalog, create in the new table's namespace and write on the table (its refreshes commit to it).

    Raises:
        NotGrantedError: naming every grant missing and who may give each (nothing was written).
    """
    ident = catalog.identifier(name)
    why: dict[Securable, str] = {namespace(*ident[:-1]): " (to create the table)", table(*ident): " (to refresh it)"}
    needs: list[tuple[Privilege, Securable]] = []
    for source in sources:
        if source.split(".", 1)[0] == catalog.spark_name:
            on = table(*catalog.identifier(source))
            needs.append((Privilege.READ_DATA, on))
            why[on] = " (a source of the query)"
    needs += [(Privilege.CREATE, namespace(*ident[:-1])), (Privilege.WRITE, table(*ident))]
    from mt_magic.catalog.tables import reaching

    with reaching(f"the grants of {name}"):
        missing = missing_grants(catalog.catalog, needs)
    if missing:
        raise refusal(statement, missing, why)


def audit_lines(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Audit entries as lines: when (UTC), who, from where, what, on what, details."""
    lines = []
    for e in entries:
        at = datetime.fromtimestamp(e["at-ms"] / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        on = Securable.from_json(e["object"])
        details = ", ".join(f"{k}={v}" for k, v in sorted(e["details"].items()) if v not in (None, "", [], {}))
        lines.append(f"{at}  {e['principal']:<12} {e['address']:<21} {e['action']:<16} {on}  {details}".rstrip())
    return lines
