"""Scoped storage credentials for a table on S3-compatible storage (the REST spec's ``X-Iceberg-Access-Delegation:
vended-credentials``).

The server keeps the storage's own credentials (an IAM user's key: :class:`S3Storage`) to itself: it writes
metadata with them and never sends them. A client that asks for delegated access gets temporary credentials from
STS ``AssumeRole`` that reach only the table's folders (its location and the folders its ``write.*.path`` properties
name): ``s3:GetObject`` there for a reader, and ``PutObject``/``DeleteObject`` too for a writer, except on the
``*.metadata.json`` files only the server writes. The scope is in the assumed role's own policy (a role per scope,
made on first use: ``mt-read-…``/``mt-write-…``) and again in the session policy: a store that checks either one
(moto checks the role's; AWS checks both) refuses everything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ACCESS_KEY_ENV = "MT_MAGIC_S3_ACCESS_KEY_ID"
SECRET_KEY_ENV = "MT_MAGIC_S3_SECRET_ACCESS_KEY"
VENDED = "vended-credentials"
DEFAULT_DURATION_SECONDS = 3600
MAX_KEPT = 10_000
"""How many issued credentials the vendor keeps for reuse (principal, folders, access) before it forgets them all."""
# AWS checks an S3 request against the action its operation maps to (HeadObject -> s3:GetObject, UploadPart ->
# s3:PutObject); moto against the operation's own name: each list names both, so one policy scopes either store.
_READ = ("s3:GetObject", "s3:HeadObject")
_WRITE = (
    *_READ,
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
    "s3:CreateMultipartUpload",
    "s3:UploadPart",
    "s3:CompleteMultipartUpload",
    "s3:ListParts",
)


@dataclass(frozen=True)
class S3Storage:
    """Where the warehouse's S3-compatible store is and the server's own key for it (never in a response or log)."""

    endpoint: str
    region: str
    access_key_id: str = field(repr=False)
    secret_access_key: str = field(repr=False)
    duration_seconds: int = DEFAULT_DURATION_SECONDS

    def file_io_properties(self) -> dict[str, str]:
        """The server's own FileIO settings (pyiceberg's ``s3.*`` keys) for the metadata it writes."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.region": self.region,
            "s3.access-key-id": self.access_key_id,
            "s3.secret-access-key": self.secret_access_key,
        }

    @classmethod
    def load(
        cls, endpoint: str, region: str, credentials_file: Path | None, duration_seconds: int = DEFAULT_DURATION_SECONDS
    ) -> S3Storage:
        """The server's key from an owner-only JSON file (``{"access-key-id": …, "secret-access-key": …}``) or, without
        one, from ``$MT_MAGIC_S3_ACCESS_KEY_ID`` / ``$MT_MAGIC_S3_SECRET_ACCESS_KEY``.

        Raises:
            ValueError: the endpoint is not an http(s) URL, the file is readable by others, unreadable or lacks a
                key, or neither file nor environment holds one; the message says what to fix.
        """
        if urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).netloc:
            raise ValueError(
                f"--s3-endpoint {endpoint!r} is not an http(s) URL. Fix: e.g. --s3-endpoint http://127.0.0.1:9000"
            )
        if not 900 <= duration_seconds <= 43200:
            raise ValueError(
                f"--s3-credentials-seconds {duration_seconds} is outside STS's 900..43200 seconds. "
                f"Fix: e.g. --s3-credentials-seconds {DEFAULT_DURATION_SECONDS}"
            )
        if credentials_file is not None:
            try:
                mode = credentials_file.stat().st_mode
            except OSError as exc:
                raise _unreadable(credentials_file, exc) from None
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ValueError(
                    f"{credentials_file} is readable by others (mode {oct(mode & 0o777)}). "
                    f"Fix: chmod 600 {credentials_file}"
                )
            try:
                data = json.loads(credentials_file.read_text())
            except json.JSONDecodeError:
                data = None  # refused below, without echoing the file's text
            except OSError as exc:  # a folder, or a file the server's user may not read
                raise _unreadable(credentials_file, exc) from None
            key, secret = (
                data.get(k) if isinstance(data, dict) else None for k in ("access-key-id", "secret-access-key")
            )
            where = str(credentials_file)
        else:
            key, secret, where = os.environ.get(ACCESS_KEY_ENV), os.environ.get(SECRET_KEY_ENV), "the environment"
        if not isinstance(key, str) or not key or not isinstance(secret, str) or not secret:
            raise ValueError(
                f"No S3 key in {where} for the warehouse's store. Fix: --s3-credentials-file FILE (mode 600) holding "
                f'{{"access-key-id": …, "secret-access-key": …}}, or export {ACCESS_KEY_ENV} and {SECRET_KEY_ENV}'
            )
        return cls(endpoint.rstrip("/"), region, key, secret, duration_seconds)


def _unreadable(credentials_file: Path, exc: OSError) -> ValueError:
    return ValueError(
        f"--s3-credentials-file {credentials_file} cannot be read ({exc.strerror}). Fix: give the path of an "
        'existing file (mode 600) holding {"access-key-id": …, "secret-access-key": …}'
    )


@dataclass(frozen=True)
class VendedCredentials:
    """Temporary credentials for one table's folders: what a load result's ``config`` and ``storage-credentials``
    carry."""

    prefix: str
    config: Mapping[str, str] = field(repr=False)
    write: bool
    expires_at_ms: int

    def to_wire(self) -> list[dict[str, Any]]:
        """The spec's ``storage-credentials`` list."""
        return [{"prefix": self.prefix, "config": dict(self.config)}]


def _resources(places: Sequence[str], objects: str = "*") -> list[str]:
    """``arn:aws:s3:::bucket/path/<objects>`` for each ``s3://bucket/path`` place (other schemes have no S3 scope)."""
    arns = []
    for place in places:
        parts = urlsplit(place)
        if parts.scheme not in ("s3", "s3a") or not parts.netloc:
            raise ValueError(f"{place!r} is not an s3:// location; only S3 locations get vended credentials")
        arns.append(f"arn:aws:s3:::{parts.netloc}/{parts.path.strip('/')}/{objects}")
    return sorted(set(arns))


def scope_policy(places: Sequence[str], write: bool) -> dict[str, Any]:
    """The IAM policy that allows reading (and with ``write``, writing and deleting) objects under ``places`` only.

    A writer is denied the ``*.metadata.json`` files there: only the server writes those (a REST commit), and one
    replaced behind its back would change the table (its folders, its snapshots) with no commit, grant or audit.
    """
    statements: list[dict[str, Any]] = [{"Effect": "Allow", "Action": list(_WRITE if write else _READ)}]
    statements[0]["Resource"] = _resources(places)
    if write:
        denied = [action for action in _WRITE if action not in _READ]
        statements.append({"Effect": "Deny", "Action": denied, "Resource": _resources(places, "*.metadata.json")})
    return {"Version": "2012-10-17", "Statement": statements}


class CredentialVendor:
    """Hands out :class:`VendedCredentials` through the store's IAM and STS APIs with the server's own key; a
    principal asking again for the same folders gets the same ones while more than half their life is left."""

    def __init__(self, storage: S3Storage, clock: Callable[[], float] = time.time) -> None:
        import boto3  # the s3 extra: only a server with an S3 warehouse needs it
        from botocore.config import Config

        session = boto3.session.Session(
            aws_access_key_id=storage.access_key_id,
            aws_secret_access_key=storage.secret_access_key,
            region_name=storage.region,
        )
        self._storage = storage
        from urllib.parse import urlparse

        from mt_magic.loopback import is_loopback

        # a store on this machine is reached directly: the server's key never goes through the environment's proxy
        loopback = is_loopback(urlparse(storage.endpoint or "").hostname)
        direct: dict[str, dict[str, str]] = {"proxies": {}} if loopback else {}
        config = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 2}, **direct)
        self._iam = session.client("iam", endpoint_url=storage.endpoint, config=config)
        self._sts = session.client("sts", endpoint_url=storage.endpoint, config=config)
        self._lock = threading.Lock()
        self._roles: dict[str, str] = {}
        self._clock = clock
        self._issued: dict[tuple[str, tuple[str, ...], bool], VendedCredentials] = {}

    def _trust(self) -> dict[str, Any]:
        """Who may assume the roles: the server's own IAM user, no one else."""
        server = self._sts.get_caller_identity()["Arn"]
        allow = {"Effect": "Allow", "Principal": {"AWS": server}, "Action": "sts:AssumeRole"}
        return {"Version": "2012-10-17", "Statement": [allow]}

    def _role(self, policy: dict[str, Any], write: bool) -> str:
        """The ARN of the role whose own policy is ``policy``, made on first use (named by the policy's digest)."""
        text = json.dumps(policy, sort_keys=True)
        name = f"mt-{'write' if write else 'read'}-{hashlib.sha256(text.encode()).hexdigest()[:40]}"
        with self._lock:
            if name not in self._roles:
                try:
                    arn = self._iam.get_role(RoleName=name)["Role"]["Arn"]
                except self._iam.exceptions.NoSuchEntityException:
                    trust = json.dumps(self._trust())
                    arn = self._iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust)["Role"]["Arn"]
                self._iam.put_role_policy(RoleName=name, PolicyName="mt-scope", PolicyDocument=text)
                self._roles[name] = arn
            return self._roles[name]

    def vend(self, principal: str, places: Sequence[str], write: bool) -> VendedCredentials:
        """Temporary credentials reaching only ``places`` (the table's folders; the first is its location).

        Raises:
            ValueError: a place is not an ``s3://`` location.
            RestError: 503 when the store does not issue them (the store's own message stays in the server).
        """
        key = (principal, tuple(places), write)
        with self._lock:
            kept = self._issued.get(key)
        if kept is not None and (kept.expires_at_ms / 1000 - self._clock()) > self._storage.duration_seconds / 2:
            return kept  # one STS call per principal and scope per half a lifetime, not one per load
        policy = scope_policy(places, write)
        try:
            vended = self._vend(principal, places, policy, write)
        except Exception as exc:  # botocore's errors: the store is down or refused the server's key
            from mt_magic.catalog.server.errors_http import RestError  # here: the command line imports this module

            raise RestError(
                503,
                "ServiceUnavailableException",
                f"The storage at {self._storage.endpoint} did not issue credentials ({type(exc).__name__}). "
                "Fix: check that the store is up and that the server's key may call IAM CreateRole/PutRolePolicy and "
                "STS AssumeRole, or load the table without X-Iceberg-Access-Delegation",
            ) from exc
        with self._lock:
            if len(self._issued) >= MAX_KEPT:
                self._issued.clear()
            self._issued[key] = vended
        return vended

    def _vend(self, principal: str, places: Sequence[str], policy: dict[str, Any], write: bool) -> VendedCredentials:
        session_name = "".join(c if c.isalnum() or c in "=,.@-_" else "_" for c in principal)[:64].ljust(2, "_")
        answer = self._sts.assume_role(
            RoleArn=self._role(policy, write),
            RoleSessionName=session_name,
            Policy=json.dumps(policy),
            DurationSeconds=self._storage.duration_seconds,
        )["Credentials"]
        expires_at_ms = int(answer["Expiration"].timestamp() * 1000) if "Expiration" in answer else 0
        expires_at_ms = expires_at_ms or int((time.time() + self._storage.duration_seconds) * 1000)
        config = {
            "s3.access-key-id": answer["AccessKeyId"],
            "s3.secret-access-key": answer["SecretAccessKey"],
            "s3.session-token": answer["SessionToken"],
            "s3.session-token-expires-at-ms": str(expires_at_ms),
            "s3.endpoint": self._storage.endpoint,
            "s3.region": self._storage.region,
            "client.region": self._storage.region,
            "s3.path-style-access": "true",
        }
        return VendedCredentials(places[0].rstrip("/") + "/", config, write, expires_at_ms)


def delegation_wanted(header: str | None) -> bool:
    """Whether an ``X-Iceberg-Access-Delegation`` header asks for vended credentials (a comma-separated list)."""
    return header is not None and VENDED in {part.strip().lower() for part in header.split(",")}
