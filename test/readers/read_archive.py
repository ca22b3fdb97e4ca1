"""Read every Parquet data file of an s3:// ttlstream archive the way another team's tools would, and print each row.

    python read_archive.py pyarrow|spark --endpoint URL --region R --access-key K --secret-key S \
        --bucket B --prefix P [--jars DIR] [--ddl FILE --ddl-table NAME]

pyarrow reads through its own S3 file system; Spark (local mode) through s3a, as an EMR or Glue job would, with the
hadoop-aws jars in --jars. Both discover the Hive partitions (table=, date=, hour=) from the paths. Data files are
the `*.parquet` objects; the key indexes (`_index/`) and the `_manifest/`-style folders are skipped by every engine,
and the filter keeps to Parquet in hours an older version left key indexes beside their files.

Prints one JSON object per row (timestamps as epoch milliseconds, binaries as base64), then a last line
{"stats": {...}}: files read, rows, wall and CPU seconds (Spark: its JVM's too; with --ddl, the deletions counted
through the table that `ttlstream archive ddl --engine spark` creates). Used by
test/integration/archive/parquet-readers.test.ts; the venv comes from scripts/ensure-parquet-readers.sh.
"""

import argparse
import base64
import datetime
import glob
import json
import os
import resource
import sys
import tempfile
import time

STARTED = time.monotonic()


def cpu_seconds_of(pid):
    """utime + stime of a process from /proc, in seconds (USER_HZ 100)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def emit(row):
    sys.stdout.write(json.dumps({k: plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n")


def read_with_pyarrow(a):
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    scheme, _, host = a.endpoint.partition("://")
    s3 = pafs.S3FileSystem(
        access_key=a.access_key,
        secret_key=a.secret_key,
        region=a.region,
        endpoint_override=host,
        scheme=scheme,
    )
    base = f"{a.bucket}/{a.prefix}".rstrip("/")
    listed = s3.get_file_info(pafs.FileSelector(base, recursive=True))
    files = sorted(i.path for i in listed if i.type == pafs.FileType.File and i.path.endswith(".parquet"))
    partitions = pa.schema([("table", pa.string()), ("date", pa.string()), ("hour", pa.string())])
    # Files of different tables have different key_<attribute> columns: the union of them all, then the partitions.
    schema = pa.unify_schemas([ds.dataset(f, filesystem=s3, format="parquet").schema for f in files] + [partitions])
    dataset = ds.dataset(
        files,
        schema=schema,
        filesystem=s3,
        format="parquet",
        partitioning=ds.partitioning(partitions, flavor="hive"),
        partition_base_dir=base,
    )
    table = dataset.to_table()
    for row in table.to_pylist():
        emit(row)
    return {"files": len(files), "rows": table.num_rows, "cpuSeconds": own_cpu_seconds()}


def read_with_spark(a):
    from pyspark.sql import SparkSession
    from pyspark.sql.types import BinaryType, TimestampType

    jars = sorted(glob.glob(os.path.join(a.jars, "*.jar")))
    # A short job: the client JIT alone and the serial GC cost the JVM less CPU than C2 and G1 (as the local stack's
    # JVMs, infra/lib.sh), which CI's two cores share with the test stacks.
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS",
        '--driver-java-options "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" --driver-memory 1g pyspark-shell',
    )
    # The tables `archive ddl` creates get a warehouse folder; a temporary one, not ./spark-warehouse in the checkout.
    warehouse = tempfile.TemporaryDirectory(prefix="ttlstream-spark-warehouse-")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("ttlstream-archive-read")
        .config("spark.jars", ",".join(jars))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", warehouse.name)
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.session.timeZone", "UTC")
        # The partition values as the paths spell them (date=2026-12-03, hour=07), not inferred dates and ints.
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.jsonGenerator.ignoreNullFields", "false")
        .config("spark.hadoop.fs.s3a.endpoint", a.endpoint)
        .config("spark.hadoop.fs.s3a.endpoint.region", a.region)
        .config("spark.hadoop.fs.s3a.path.style.access", "true")
        .config("spark.hadoop.fs.s3a.connection.ssl.enabled", a.endpoint.startswith("https"))
        .config("spark.hadoop.fs.s3a.access.key", a.access_key)
        .config("spark.hadoop.fs.s3a.secret.key", a.secret_key)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = spark.sparkContext._gateway.proc.pid
    frame = (
        spark.read.option("pathGlobFilter", "*.parquet")
        .option("mergeSchema", "true")
        .parquet(f"s3a://{a.bucket}/{a.prefix}".rstrip("/") + "/")
    )
    files = len(frame.inputFiles())
    columns = []
    for field in frame.schema.fields:
        name = f"`{field.name}`"
        if isinstance(field.dataType, TimestampType):
            columns.append(f"unix_millis({name}) as {name}")
        elif isinstance(field.dataType, BinaryType):
            columns.append(f"base64({name}) as {name}")
        else:
            columns.append(name)
    rows = [json.loads(line) for line in frame.selectExpr(*columns).toJSON().collect()]
    for row in rows:
        emit(row)
    ddl_rows = None
    if a.ddl:
        # `ttlstream archive ddl --engine spark` as printed: its statements, then a count through the table it made.
        with open(a.ddl) as f:
            for statement in f.read().split(";"):
                if statement.strip():
                    spark.sql(statement)
        ddl_rows = spark.sql(f"select count(distinct event_id) as n from {a.ddl_table}").collect()[0]["n"]
    jvm_cpu = cpu_seconds_of(jvm_pid)
    spark.stop()
    warehouse.cleanup()
    return {
        "files": files,
        "rows": len(rows),
        "ddlRows": ddl_rows,
        "cpuSeconds": own_cpu_seconds() + jvm_cpu,
        "jvmCpuSeconds": jvm_cpu,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("reader", choices=["pyarrow", "spark"])
    for name in ["endpoint", "region", "access-key", "secret-key", "bucket", "prefix"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--jars", default="")
    parser.add_argument("--ddl", default="", help="spark: a file of `ttlstream archive ddl --engine spark` to run")
    parser.add_argument("--ddl-table", default="", help="spark: the table that DDL creates")
    a = parser.parse_args()
    stats = read_with_pyarrow(a) if a.reader == "pyarrow" else read_with_spark(a)
    stats["wallSeconds"] = time.monotonic() - STARTED
    sys.stdout.write(json.dumps({"stats": stats}) + "\n")


if __name__ == "__main__":
    main()
