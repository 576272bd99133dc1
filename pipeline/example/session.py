"""A small local SparkSession whose Python workers run this interpreter."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

SHUFFLE_PARTITIONS = 2


def local_session(app_name: str, master: str = "local[2]") -> SparkSession:
    # Workers must import pipeline and confluent_kafka: run them with this (venv) Python.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark
