#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: Java 17, Maven, Debian packages, a virtualenv with the Python
# dependencies and one PySpark line, and the Iceberg runtime jar for that line (cached outside the repository).
#   scripts/setup.sh                         what the demo needs, in .venv, with the default PySpark
#   scripts/setup.sh --test                  plus what the tests need (Chromium for the browser test, PostgreSQL
#                                            for the shared-catalog test, Iceberg's REST Compatibility Kit and
#                                            reference REST server from Maven, Apache Airflow 3 in .venv-airflow)
#   scripts/setup.sh --venv DIR --pyspark V  another virtualenv with PySpark V (the second line CI tests)
#   scripts/setup.sh --connect               plus the Spark Connect client (pyspark[connect]: grpcio, pandas, …)
#   scripts/setup.sh --pyiceberg V           pyiceberg V in that virtualenv (else the newest the pin allows)
# MT_MAGIC_ICEBERG=maven (default) fetches org.apache.iceberg:iceberg-spark-runtime-<spark>_<scala> with Maven;
# MT_MAGIC_ICEBERG=offline assembles the Spark 3.5 runtime without Maven Central (the documented fallback).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
pyspark=""
pyiceberg=""
with_test=0
extras=dev
while [ $# -gt 0 ]; do
  case "$1" in
    --test) with_test=1 ;;
    --connect) extras=dev,connect ;;
    --venv) venv="$2"; shift ;;
    --pyspark) pyspark="$2"; shift ;;
    --pyiceberg) pyiceberg="$2"; shift ;;
    *) echo "setup: unknown option $1 (use --test, --connect, --venv DIR, --pyspark VERSION, --pyiceberg VERSION)" >&2
       exit 2 ;;
  esac
  shift
done
iceberg="${MT_MAGIC_ICEBERG:-maven}"

packages=()
# a JDK, not only a JRE: javac compiles the filter that keeps Spark's web pages to their owner (ui_auth.py)
command -v javac >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
case "$iceberg" in
  maven) command -v mvn >/dev/null 2>&1 || packages+=(maven) ;;
  offline) [ -f /usr/share/java/jarjar.jar ] || packages+=(libjarjar-java) ;;
esac
if [ "$with_test" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || packages+=(chromium)
  # the shared-catalog test starts a throw-away PostgreSQL cluster (tests/catalog/postgres_cluster.py)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || packages+=(postgresql)
  # the REST Compatibility Kit's jars come through Maven, whichever way the Iceberg runtime comes
  command -v mvn >/dev/null 2>&1 || [[ " ${packages[*]} " == *" maven "* ]] || packages+=(maven)
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${packages[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
stamp="$venv/.installed-$( (cat pyproject.toml; echo "$pyspark $extras $pyiceberg") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python dependencies into $venv${pyspark:+ (pyspark==$pyspark)}${pyiceberg:+ (pyiceberg==$pyiceberg)}"
  "$venv/bin/python" -m pip install -q --upgrade pip
  # the newest pyiceberg the pin allows, unless asked for one (the second line runs the oldest: make setup-other)
  newest=""; [ -n "$pyiceberg" ] || newest="--upgrade --upgrade-strategy=eager"
  "$venv/bin/python" -m pip install -q $newest -e ".[$extras]" ${pyspark:+"pyspark==$pyspark"} \
    ${pyiceberg:+"pyiceberg[sql-sqlite,pyarrow]==$pyiceberg"}
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
# an editable install leaves pyproject's data files out: JupyterLab's override that saves widget state with the
# notebook (a reopened notebook shows its cards, not "model not found") goes where a wheel install puts it
overrides="$venv/share/jupyter/lab/settings/overrides.d"
mkdir -p "$overrides" && cp jupyter-config/lab/settings/overrides.d/mt_magic.json "$overrides/"

case "$iceberg" in
  maven) jar_module=mt_magic.runtime.spark.iceberg_maven ;;
  offline) jar_module=mt_magic.runtime.spark.iceberg_jars ;;
  packages) jar_module="" ;;  # Spark fetches the jar itself at session start
  *) echo "setup: MT_MAGIC_ICEBERG=$iceberg is not one of maven, packages, offline" >&2; exit 2 ;;
esac
if [ -n "$jar_module" ]; then
  start=$(date +%s)
  "$venv/bin/python" -m "$jar_module" >/dev/null
  echo "setup: Iceberg runtime ($iceberg) ready in $(( $(date +%s) - start )) s"
fi
if [ "$with_test" = 1 ]; then
  # Apache Iceberg's REST Compatibility Kit and reference REST server (tests/catalog/rck/pom.xml), resolved by
  # Maven into the cache, one folder per version of the pom (tests/reference_catalog.py finds it there).
  rck_pom=tests/catalog/rck/pom.xml
  rck_dir="${MT_MAGIC_JARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mt_magic}/rck/$(sha256sum "$rck_pom" | cut -c1-16)"
  if [ ! -f "$rck_dir/complete" ]; then
    start=$(date +%s)
    rm -rf "$rck_dir/lib"
    mkdir -p "$rck_dir"
    mvn -B -q -C -f "$rck_pom" org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      -DoutputDirectory="$rck_dir/lib"
    touch "$rck_dir/complete"
    echo "setup: Iceberg REST Compatibility Kit ready in $(( $(date +%s) - start )) s ($rck_dir)"
  fi
  # iceberg-aws-bundle beside the Iceberg runtime (S3FileIO's SDK) for the vended-credentials Spark test, pinned in
  # tests/catalog/s3_store.py and fetched into the runtime's cache; a Spark line without a pin is only reported
  "$venv/bin/python" tests/catalog/s3_store.py
fi
if [ "$with_test" = 1 ] && [ "$venv" = .venv ]; then
  # Apache Airflow 3 in a virtualenv of its own (its pins would clash with the notebook stack), for the tests of
  # refresh workflows on Airflow (tests/airflow) and its benchmark. Its DAG module reads the catalog with pyiceberg
  # and mt_magic's catalog package (installed without dependencies: no Spark at parse time); each task runs the
  # refresh with .venv's Python. About 3 minutes cold; MT_MAGIC_AIRFLOW_VENV moves it.
  airflow_venv="${MT_MAGIC_AIRFLOW_VENV:-.venv-airflow}"
  # pyiceberg as the main pin allows (pyproject.toml), the newest of it: --upgrade moves an existing venv too
  pyiceberg_pin=$(sed -n 's/^ *"pyiceberg\[[^]]*\]\([^"]*\)",$/\1/p' pyproject.toml)
  airflow_pins="apache-airflow==3.3.2 pyiceberg[pyarrow]$pyiceberg_pin"
  airflow_stamp="$airflow_venv/.installed-$(echo "$airflow_pins" | sha256sum | cut -c1-16)"
  if [ ! -f "$airflow_stamp" ]; then
    start=$(date +%s)
    [ -x "$airflow_venv/bin/python" ] || python3 -m venv "$airflow_venv"
    "$airflow_venv/bin/python" -m pip install -q --upgrade pip
    # shellcheck disable=SC2086  # the pins are separate words
    "$airflow_venv/bin/python" -m pip install -q --upgrade $airflow_pins
    "$airflow_venv/bin/python" -m pip install -q --no-deps -e .
    rm -f "$airflow_venv"/.installed-*
    touch "$airflow_stamp"
    echo "setup: Airflow ($airflow_pins) ready in $(( $(date +%s) - start )) s ($airflow_venv)"
  fi
fi
echo "setup: ready ($venv, pyspark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)'))"
