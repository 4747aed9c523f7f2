"""Scoped storage credentials on a real S3-compatible store (issue 48): the catalog server (``serve`` on 127.0.0.1
with an ``s3://`` warehouse) hands a principal that sends ``X-Iceberg-Access-Delegation: vended-credentials``
temporary credentials that reach only the loaded table's folder, read-only with READ_DATA and read-write with
WRITE; without READ_DATA it answers 403 and hands out nothing. The clients are pyiceberg's own REST catalog with no
storage credentials of their own, and boto3 with exactly the credentials a response carried.

The store is moto's server with IAM access control on (``s3_store``); the tests skip only where moto is not
installed (``scripts/setup.sh --test`` installs it).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest

pytest.importorskip("moto.server", reason="moto[server] (the S3 store of these tests) is not installed")
pytest.importorskip("boto3")

from botocore.exceptions import ClientError  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from s3_store import BUCKET, S3Store, running_store, spark_jars  # noqa: E402
from serve_process import serving  # noqa: E402

ADMIN_TOKEN = "admin-token-of-the-s3-catalog"
DELEGATION = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("who", pa.string())])
ICEBERG_SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
GRANTS = {"reader": ["read-data"], "writer": ["write", "create"], "lister": ["read-metadata", "create"]}


@dataclass
class Team:
    """The store, the server, the admin's HTTP client, each principal's token, and every response body seen."""

    store: S3Store
    url: str
    log: Path
    admin: httpx.Client
    tokens: dict[str, str]
    seen: list[str] = field(default_factory=list)

    def http(self, who: str) -> httpx.Client:
        token = ADMIN_TOKEN if who == "admin" else self.tokens[who]
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)

    def load(self, who: str, name: str, delegated: bool = True) -> httpx.Response:
        with self.http(who) as client:
            response = client.get(f"/v1/namespaces/a/tables/{name}", headers=DELEGATION if delegated else {})
        self.seen.append(response.text)
        return response

    def catalog(self, who: str) -> RestCatalog:
        """pyiceberg's REST catalog as ``who``: a token and the delegation header, no storage settings at all."""
        return RestCatalog(
            who, uri=self.url, token=self.tokens[who], **{"header.X-Iceberg-Access-Delegation": "vended-credentials"}
        )


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, response.text
    return response.json() if response.content else None


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    folder = tmp_path_factory.mktemp("vended")
    own = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} & set(os.environ)
    assert not own, f"the clients must have no storage credentials of their own: {own}"
    with running_store(folder) as store:
        key_file = folder / "s3-key.json"
        key_file.touch(mode=0o600)
        key_file.write_text(
            json.dumps({"access-key-id": store.access_key_id, "secret-access-key": store.secret_access_key})
        )
        log = folder / "server.log"
        args = ("--warehouse", f"s3://{BUCKET}/wh", "--uri", f"sqlite:///{folder}/catalog.db")
        args += ("--s3-endpoint", store.endpoint, "--s3-credentials-file", str(key_file))
        with serving(*args, token=ADMIN_TOKEN, log=log) as url:
            admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60)
            for ns in ("a", "b"):
                _ok(admin.post("/v1/namespaces", json={"namespace": [ns]}))
            _ok(admin.post("/v1/namespaces/b/tables", json={"name": "other", "schema": ICEBERG_SCHEMA}))
            tokens = {}
            for name, privileges in GRANTS.items():
                tokens[name] = _ok(admin.post("/v1/mt/principals", json={"name": name, "kind": "person"}))["token"]
                _ok(admin.post("/v1/mt/roles", json={"name": f"{name}_role"}))
                _ok(admin.post(f"/v1/mt/roles/{name}_role/members", json={"principal": name}))
                for privilege in privileges:
                    on = {"type": "namespace", "name": ["a"]}
                    _ok(admin.post("/v1/mt/grants", json={"role": f"{name}_role", "privilege": privilege, "on": on}))
            team = Team(store, url, log, admin, tokens)
            writer = team.catalog("writer")
            table = writer.create_table("a.events", SCHEMA)
            table.append(pa.table({"id": [1, 2], "who": ["writer", "writer"]}, schema=SCHEMA))
            yield team
            admin.close()


def _s3(team: Team, config: dict[str, str]) -> Any:
    return team.store.client(
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )


def _refused(call: Any) -> str:
    with pytest.raises(ClientError) as refused:
        call()
    return str(refused.value.response["Error"]["Code"])


def _key(location: str) -> str:
    assert location.startswith(f"s3://{BUCKET}/"), location
    return location.removeprefix(f"s3://{BUCKET}/")


def test_a_writer_appends_with_vended_credentials_alone_and_a_reader_reads_the_rows(team: Team) -> None:
    rows = team.catalog("reader").load_table("a.events").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == [1, 2]
    assert set(rows.column("who").to_pylist()) == {"writer"}


def test_a_readers_credentials_read_only_its_table_and_a_writers_write_only_there(team: Team) -> None:
    loaded = _ok(team.load("reader", "events"))
    config = loaded["config"]
    location = loaded["metadata"]["location"]
    assert loaded["storage-credentials"] == [{"prefix": location + "/", "config": config}]
    assert int(config["s3.session-token-expires-at-ms"]) > 0 and config["s3.endpoint"] == team.store.endpoint
    data_file = next(iter(team.catalog("reader").load_table("a.events").scan().plan_files())).file.file_path
    reader = _s3(team, config)
    assert reader.get_object(Bucket=BUCKET, Key=_key(data_file))["Body"].read()[:4] == b"PAR1"
    assert _refused(lambda: reader.put_object(Bucket=BUCKET, Key=_key(location) + "/data/x.parquet", Body=b"x")) == (
        "AccessDenied"
    )
    assert _refused(lambda: reader.delete_object(Bucket=BUCKET, Key=_key(data_file))) == "AccessDenied"

    writer = _s3(team, _ok(team.load("writer", "events"))["config"])
    writer.put_object(Bucket=BUCKET, Key=_key(location) + "/data/written-by-the-writer", Body=b"w")
    writer.delete_object(Bucket=BUCKET, Key=_key(location) + "/data/written-by-the-writer")
    own_metadata = _ok(team.admin.get("/v1/namespaces/a/tables/events"))["metadata-location"]  # only the server's
    assert _refused(lambda: writer.put_object(Bucket=BUCKET, Key=_key(own_metadata), Body=b"{}")) == "AccessDenied"
    assert _refused(lambda: writer.delete_object(Bucket=BUCKET, Key=_key(own_metadata))) == "AccessDenied"
    assert writer.get_object(Bucket=BUCKET, Key=_key(own_metadata))["Body"].read()[:1] == b"{"

    other = _ok(team.admin.get("/v1/namespaces/b/tables/other"))["metadata-location"]
    for credentials in (reader, writer):
        assert _refused(lambda c=credentials: c.get_object(Bucket=BUCKET, Key=_key(other))) == "AccessDenied"
        put = lambda c=credentials: c.put_object(Bucket=BUCKET, Key=_key(other) + ".evil", Body=b"x")  # noqa: E731
        assert _refused(put) == "AccessDenied"
        assert _refused(lambda c=credentials: c.list_objects_v2(Bucket=BUCKET)) == "AccessDenied"

    entries = _ok(team.admin.get("/v1/mt/audit", params={"limit": 100}))["entries"]
    vended = {(e["principal"], e["details"]["access"]) for e in entries if e["action"] == "credentials-vended"}
    assert {("reader", "read"), ("writer", "write")} <= vended
    assert all(e["object"]["name"] == ["a", "events"] for e in entries if e["action"] == "credentials-vended")


def test_without_read_data_a_delegated_load_is_403_and_hands_out_nothing(team: Team) -> None:
    refused = team.load("lister", "events")
    assert refused.status_code == 403, refused.text
    assert "lacks read-data on table a.events" in refused.text and "s3." not in refused.text
    plain = _ok(team.load("lister", "events", delegated=False))  # metadata only: what READ_METADATA allows
    assert plain["config"] == {} and not plain.get("storage-credentials")
    with team.http("lister") as client:
        create = client.post(
            "/v1/namespaces/a/tables", json={"name": "t2", "schema": ICEBERG_SCHEMA}, headers=DELEGATION
        )
    assert create.status_code == 403 and "lacks read-data on table a.t2" in create.text, create.text


def test_a_staged_create_hands_its_creator_write_credentials_for_the_new_location(team: Team) -> None:
    body = {"name": "staged", "schema": ICEBERG_SCHEMA, "stage-create": True}
    with team.http("writer") as client:
        answer = client.post("/v1/namespaces/a/tables", json=body, headers=DELEGATION)
    team.seen.append(answer.text)
    staged = _ok(answer)
    location = staged["metadata"]["location"]
    assert staged.get("metadata-location") is None and staged["storage-credentials"][0]["prefix"] == location + "/"
    writer = _s3(team, staged["config"])  # pyiceberg reads config here: a staged table has no metadata location
    writer.put_object(Bucket=BUCKET, Key=_key(location) + "/data/first.parquet", Body=b"w")
    assert _refused(lambda: writer.put_object(Bucket=BUCKET, Key="wh/a/events/data/x", Body=b"x")) == "AccessDenied"


def test_the_credentials_endpoint_hands_out_fresh_ones_with_the_same_scope_and_only_with_read_data(team: Team) -> None:
    location = _ok(team.load("reader", "events"))["metadata"]["location"]
    data_file = next(iter(team.catalog("reader").load_table("a.events").scan().plan_files())).file.file_path
    with team.http("reader") as client:
        answer = client.get("/v1/namespaces/a/tables/events/credentials")
    team.seen.append(answer.text)
    [fresh] = _ok(answer)["storage-credentials"]
    assert fresh["prefix"] == location + "/"
    reader = _s3(team, fresh["config"])
    assert reader.get_object(Bucket=BUCKET, Key=_key(data_file))["Body"].read()[:4] == b"PAR1"
    assert _refused(lambda: reader.put_object(Bucket=BUCKET, Key=_key(location) + "/x", Body=b"x")) == "AccessDenied"
    with team.http("lister") as client:
        refused = client.get("/v1/namespaces/a/tables/events/credentials")
    assert refused.status_code == 403 and "lacks read-data on table a.events" in refused.text, refused.text


def test_the_servers_own_key_is_in_no_response_log_or_command_line(team: Team) -> None:
    secret, key_id = team.store.secret_access_key, team.store.access_key_id
    team.load("reader", "events")
    team.load("writer", "events")
    assert team.seen and not any(secret in body or key_id in body for body in team.seen)
    assert secret not in team.log.read_text(errors="replace")
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            assert secret.encode() not in cmdline.read_bytes(), cmdline
        except OSError:
            continue  # a process that ended meanwhile


def test_credentials_are_reused_per_principal_and_folders_for_half_their_life(team: Team) -> None:
    from mt_magic.catalog.server.storage_credentials import CredentialVendor, S3Storage

    now = [1_000_000.0]
    storage = S3Storage(team.store.endpoint, "us-east-1", team.store.access_key_id, team.store.secret_access_key, 900)
    vendor = CredentialVendor(storage, clock=lambda: now[0])
    places = [f"s3://{BUCKET}/wh/a/events"]

    def token(principal: str, write: bool = False) -> str:
        return vendor.vend(principal, places, write).config["s3.session-token"]

    first = token("reader")
    now[0] = vendor.vend("reader", places, False).expires_at_ms / 1000 - 900  # as if just issued
    assert token("reader") == first and token("writer") != first and token("reader", write=True) != first
    now[0] += 451  # less than half of its 900 s left
    assert token("reader") != first


def test_a_store_that_issues_nothing_is_a_503_naming_no_key(tmp_path: Path) -> None:
    from mt_magic.catalog.server.errors_http import RestError
    from mt_magic.catalog.server.storage_credentials import CredentialVendor, S3Storage

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
    vendor = CredentialVendor(S3Storage(endpoint, "us-east-1", "AKIASERVERKEY", "server-secret"))
    with pytest.raises(RestError, match="did not issue credentials.*Fix: ") as refused:
        vendor.vend("reader", [f"s3://{BUCKET}/wh/a/events"], write=False)
    assert refused.value.status == 503 and "server-secret" not in str(refused.value)


def test_a_key_file_others_may_read_is_refused(tmp_path: Path) -> None:
    from mt_magic.catalog.server.storage_credentials import S3Storage

    key_file = tmp_path / "key.json"
    key_file.write_text(json.dumps({"access-key-id": "AKIA", "secret-access-key": "s"}))
    key_file.chmod(0o644)
    with pytest.raises(ValueError, match="readable by others.*Fix: chmod 600"):
        S3Storage.load("http://127.0.0.1:9000", "us-east-1", key_file)
    key_file.chmod(0o600)
    assert S3Storage.load("http://127.0.0.1:9000", "us-east-1", key_file).access_key_id == "AKIA"


def test_a_missing_key_file_or_a_bad_duration_is_refused_with_a_fix(tmp_path: Path) -> None:
    from mt_magic.catalog.server.storage_credentials import S3Storage

    missing = tmp_path / "nowhere.json"
    with pytest.raises(ValueError, match=f"--s3-credentials-file {missing} cannot be read .*Fix: "):
        S3Storage.load("http://127.0.0.1:9000", "us-east-1", missing)
    with pytest.raises(ValueError, match="cannot be read .*Fix: "):
        S3Storage.load("http://127.0.0.1:9000", "us-east-1", tmp_path)  # a folder (mode 700 under pytest's tmp)
    with pytest.raises(ValueError, match="--s3-credentials-seconds 60 is outside .*Fix: "):
        S3Storage.load("http://127.0.0.1:9000", "us-east-1", None, duration_seconds=60)


SPARK_READER = """
import sys
from pyspark.sql import SparkSession
url, token, jars, secret = sys.argv[1], sys.stdin.readline().strip(), sys.argv[2], sys.stdin.readline().strip()
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.jars", jars)
    .config("spark.ui.enabled", "false")
    .config("spark.authenticate", "true")
    .config("spark.authenticate.secret", secret)
    .config("spark.sql.catalog.mt", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.mt.type", "rest")
    .config("spark.sql.catalog.mt.uri", url)
    .config("spark.sql.catalog.mt.token", token)
    .config("spark.sql.catalog.mt.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
    .config("spark.sql.catalog.mt.header.X-Iceberg-Access-Delegation", "vended-credentials")
    .getOrCreate()
)
print("ROWS", sorted(r.id for r in spark.sql("SELECT id FROM mt.a.events").collect()), flush=True)
try:
    spark.sql("INSERT INTO mt.a.events VALUES (9, 'reader')").collect()
    print("INSERT committed", flush=True)
except Exception as exc:
    print("INSERT refused", "Access Denied" in str(exc) or "Status Code: 403" in str(exc), flush=True)
spark.stop()
"""


@pytest.mark.spark
def test_spark_reads_through_a_readers_vended_credentials_and_the_store_refuses_its_insert(team: Team) -> None:
    jars = spark_jars()
    if isinstance(jars, str):
        pytest.skip(jars)
    before = _ok(team.admin.get("/v1/namespaces/a/tables/events"))["metadata-location"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYSPARK_SUBMIT"))}
    run = subprocess.run(
        [sys.executable, "-c", SPARK_READER, team.url, ",".join(map(str, jars))],
        input=f"{team.tokens['reader']}\n{secrets.token_hex(16)}\n",  # tokens and the secret never on argv
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ROWS [1, 2]" in run.stdout, run.stdout + run.stderr[-3000:]
    assert "INSERT refused True" in run.stdout, run.stdout + run.stderr[-3000:]
    assert _ok(team.admin.get("/v1/namespaces/a/tables/events"))["metadata-location"] == before


def test_serve_refuses_s3_settings_it_cannot_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mt_magic.catalog.__main__ import main

    key_file = tmp_path / "key.json"
    key_file.touch(mode=0o600)
    key_file.write_text("not json, with a secret inside")
    local = ["--warehouse", str(tmp_path / "wh"), "--s3-endpoint", "http://127.0.0.1:9", "--insecure-no-auth"]
    bad_key = ["--warehouse", f"s3://{BUCKET}/wh", "--s3-endpoint", "http://127.0.0.1:9", "--insecure-no-auth"]
    for args, expected in (
        (local, "vends credentials for an s3:// warehouse"),
        ([*bad_key, "--s3-credentials-file", str(key_file)], "No S3 key in " + str(key_file)),
    ):
        assert main(["serve", *args]) == 2
        err = capsys.readouterr().err
        assert expected in err and "Fix" in err and "secret inside" not in err, err


def _tables_and_locations(team: Team) -> dict[str, str]:
    """Every table's current metadata file, as the admin sees it: what a refused request must leave as it was."""
    found = {}
    for ns in ("a", "b"):
        for ident in _ok(team.admin.get(f"/v1/namespaces/{ns}/tables"))["identifiers"]:
            name = ".".join([*ident["namespace"], ident["name"]])
            found[name] = _ok(team.admin.get(f"/v1/namespaces/{ns}/tables/{ident['name']}"))["metadata-location"]
    return found


def _assert_refused_with_no_credentials(answer: httpx.Response) -> None:
    assert answer.status_code in (400, 403), answer.text
    assert "Fix" in answer.text and "s3.session-token" not in answer.text and "storage-credentials" not in answer.text


WIDE_PLACES = {
    "the warehouse root": f"s3://{BUCKET}/wh",
    "another namespace's folder": f"s3://{BUCKET}/wh/b",
    "another table's folder": f"s3://{BUCKET}/wh/b/other",
    "a folder of another table": f"s3://{BUCKET}/wh/a/events/data",
}


@pytest.mark.parametrize("where", WIDE_PLACES)
def test_a_staged_create_over_anothers_folders_is_refused_and_vends_nothing(team: Team, where: str) -> None:
    """Exploit A: CREATE (and write) on a namespace must not buy credentials for the warehouse or another table."""
    before = _tables_and_locations(team)
    for properties in ({}, {"write.data.path": WIDE_PLACES[where]}):
        location = WIDE_PLACES[where] if not properties else f"s3://{BUCKET}/wh/a/wide"
        body = {"name": "wide", "schema": ICEBERG_SCHEMA, "location": location, "properties": properties}
        for staged in (True, False):
            with team.http("writer") as client:
                answer = client.post(
                    "/v1/namespaces/a/tables", json={**body, "stage-create": staged}, headers=DELEGATION
                )
            team.seen.append(answer.text)
            _assert_refused_with_no_credentials(answer)
    assert _tables_and_locations(team) == before


@pytest.mark.parametrize("key", ["write.data.path", "write.metadata.path"])
def test_a_commit_pointing_a_tables_paths_at_anothers_folders_is_refused(team: Team, key: str) -> None:
    """Exploit B: WRITE on one table must not redirect its folders over the warehouse and then load credentials."""
    before = _tables_and_locations(team)
    for place in [p for p in WIDE_PLACES.values() if not p.startswith(f"s3://{BUCKET}/wh/a/events")]:  # not its own
        update = {"action": "set-properties", "updates": {key: place}}
        with team.http("writer") as client:
            answer = client.post("/v1/namespaces/a/tables/events", json={"requirements": [], "updates": [update]})
        _assert_refused_with_no_credentials(answer)
    assert _tables_and_locations(team) == before
    loaded = _ok(team.load("writer", "events"))
    assert [c["prefix"] for c in loaded["storage-credentials"]] == [loaded["metadata"]["location"] + "/"]
    writer = _s3(team, loaded["config"])
    other = _ok(team.admin.get("/v1/namespaces/b/tables/other"))["metadata-location"]
    assert _refused(lambda: writer.put_object(Bucket=BUCKET, Key=_key(other) + ".evil", Body=b"x")) == "AccessDenied"


def test_the_lease_tables_credentials_are_never_vended(team: Team) -> None:
    """The lease table needs no grant to load, so a delegated load of it hands out no credentials at all."""
    leases = {"name": "refresh_leases", "schema": ICEBERG_SCHEMA}
    if team.admin.head("/v1/namespaces/mt_magic").status_code == 404:
        _ok(team.admin.post("/v1/namespaces", json={"namespace": ["mt_magic"]}))
    if team.admin.head("/v1/namespaces/mt_magic/tables/refresh_leases").status_code == 404:
        _ok(team.admin.post("/v1/namespaces/mt_magic/tables", json=leases))
    with team.http("lister") as client:
        answer = client.get("/v1/namespaces/mt_magic/tables/refresh_leases", headers=DELEGATION)
        fresh = client.get("/v1/namespaces/mt_magic/tables/refresh_leases/credentials")
    loaded = _ok(answer)
    assert loaded["config"] == {} and not loaded.get("storage-credentials"), answer.text
    assert fresh.status_code == 403 or _ok(fresh)["storage-credentials"] == [], fresh.text
