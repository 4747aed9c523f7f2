#!/usr/bin/env bash
# Run a notebook on a Spark standalone cluster (a master and two workers on 127.0.0.1, from the installed PySpark)
# with nothing in the notebook changed: only MT_MAGIC_SPARK_MASTER is set. Prints which executors ran each refresh
# job, from Spark's event log. Too slow for every CI run (four extra JVMs on two cores), so it is a script.
#   scripts/cluster_notebook.sh [NOTEBOOK]      default: examples/lakehouse_tutorial.ipynb; PYTHON=.venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
notebook="${1:-examples/lakehouse_tutorial.ipynb}"
work="$(mktemp -d -t mt-cluster-XXXX)"
port=17077; ui_port=18080

export SPARK_LOCAL_IP=127.0.0.1 SPARK_CONF_DIR="$work/conf"
mkdir -p "$SPARK_CONF_DIR" "$work/events"
umask 077  # the drivers' settings get the cluster's secret below: owner only
cat > "$SPARK_CONF_DIR/spark-defaults.conf" <<CONF
spark.eventLog.enabled true
spark.eventLog.dir file://$work/events
spark.executor.memory 1g
spark.pyspark.python $(cd "$(dirname "$py")" && pwd)/$(basename "$py")
CONF

"$py" -m mt_magic.runtime.spark.cluster start --workers 2 --port $port --ui-port $ui_port --state "$work/cluster"
trap '"$py" -m mt_magic.runtime.spark.cluster stop --state "$work/cluster"' EXIT
# The cluster authenticates its clients. The kernels run with pytest's own MT_MAGIC_HOME, where they do not find its
# state, so they get its secret as any driver elsewhere does: from their spark-defaults.conf (0600).
"$py" -c 'import json, sys; print("spark.authenticate true\nspark.authenticate.secret", json.load(open(sys.argv[1]))["secret"])' \
  "$work/cluster/cluster.json" >> "$SPARK_CONF_DIR/spark-defaults.conf"

start=$(date +%s)
MT_MAGIC_SPARK_MASTER="spark://127.0.0.1:$port" "$py" -m pytest -q -p no:cacheprovider "$notebook"
echo "cluster_notebook: $notebook ran in $(( $(date +%s) - start )) s on spark://127.0.0.1:$port"
"$py" -m mt_magic.runtime.spark.event_log "$work/events"
