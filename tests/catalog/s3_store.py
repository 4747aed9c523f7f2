"""A real S3-compatible store on 127.0.0.1 for the credential-vending tests: moto's server with its IAM access
control on (imported by name).

moto checks every S3 request's signature and the caller's IAM policies once its first
``INITIAL_NO_AUTH_ACTION_COUNT`` requests are done: those few create the catalog's IAM user, its policy and its key;
from then on a request without a valid key is refused, and temporary credentials from STS ``AssumeRole`` reach only
what the assumed role's policy allows (moto does not apply the session policy; the role's own policy is the scope
the server writes, see :mod:`mt_magic.catalog.server.storage_credentials`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SETUP_REQUESTS = 3  # create the user, put its policy, create its key: then everything is authenticated
REGION = "us-east-1"
BUCKET = "warehouse"


@dataclass(frozen=True)
class S3Store:
    """The running store: its endpoint and the catalog's IAM user key (the server's own, kept in a 0600 file)."""

    endpoint: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    log: Path

    def client(self, service: str = "s3", **credentials: str) -> Any:
        """A boto3 client of the store, with the catalog's key unless ``credentials`` name others."""
        import boto3
        from botocore.config import Config

        keys = credentials or {"aws_access_key_id": self.access_key_id, "aws_secret_access_key": self.secret_access_key}
        config = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION, config=config, **keys)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_store(folder: Path) -> Iterator[S3Store]:
    """moto's server on a free loopback port with IAM access control on, a bucket ``warehouse``, and the catalog's
    IAM user allowed everything; stopped when the block ends."""
    port = _free_port()
    log = folder / "moto.log"
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"moto server did not start:\n{log.read_text(errors='replace')}") from None
                time.sleep(0.1)
        store = S3Store(f"http://127.0.0.1:{port}", "", "", log)
        iam = store.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup")
        iam.create_user(UserName="catalog")
        everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="catalog", PolicyName="all", PolicyDocument=json.dumps(everything))
        key = iam.create_access_key(UserName="catalog")["AccessKey"]
        store = S3Store(store.endpoint, key["AccessKeyId"], key["SecretAccessKey"], log)
        store.client().create_bucket(Bucket=BUCKET)
        yield store
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@dataclass(frozen=True)
class AwsBundle:
    """Iceberg's ``iceberg-aws-bundle`` (the AWS SDK that ``S3FileIO`` in the Spark runtime needs), pinned like the
    runtime jar: fetched by :func:`mt_magic.runtime.spark.iceberg_maven.fetch` into the same cache."""

    iceberg: str
    sha256: str

    @property
    def coordinates(self) -> str:
        return f"org.apache.iceberg:iceberg-aws-bundle:{self.iceberg}"

    @property
    def jar_name(self) -> str:
        return f"iceberg-aws-bundle-{self.iceberg}.jar"


AWS_BUNDLES = {"3.5": AwsBundle("1.10.1", "86bf20892ea5b4c17688f19b075399885f6aa5303f6b2dc9f491e76ceef9633b")}
"""Spark line -> the bundle beside its runtime (1.10.2's is not served here; 1.10.1's SDK serves the 1.10.2 runtime)."""


def spark_jars() -> list[Path] | str:
    """The Iceberg runtime and AWS bundle jars for the installed PySpark (fetched once, checksummed), or why not."""
    from mt_magic.errors import RuntimeSetupError
    from mt_magic.runtime.spark import iceberg_maven

    runtime = iceberg_maven.installed_runtime()
    bundle = AWS_BUNDLES.get(runtime.spark_line)
    if bundle is None:
        return f"no iceberg-aws-bundle pinned for Spark {runtime.spark_line}"
    try:
        return [iceberg_maven.fetch(runtime), iceberg_maven.fetch(bundle)]  # type: ignore[arg-type]
    except RuntimeSetupError as exc:
        return str(exc)


if __name__ == "__main__":  # scripts/setup.sh --test: fetch the jars now rather than on the test's first run
    jars = spark_jars()
    print(f"setup: {'iceberg-aws-bundle ready (' + str(jars[-1]) + ')' if isinstance(jars, list) else jars}")
