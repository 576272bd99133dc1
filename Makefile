# Everyday entry points. Every target depends on `setup`, which builds .venv once and
# re-installs only when pyproject.toml changes (the stamp file records the last install).

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.setup-stamp
# Extra arguments for scripts/cluster, e.g. make up ARGS="--brokers 1 --set num.partitions=3"
ARGS ?=

.PHONY: setup up down status lab test test-unit lint pipeline reference spark-connector bytecode test-bytecode

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	@touch $@

# Apache Kafka 3.9 (reference/pom.xml) for `scripts/cluster up --impl kafka` and the
# differential tests: fetched once from Maven Central into reference/lib, offline afterwards.
REFERENCE_STAMP := reference/lib/.fetched
# A class-data-sharing archive of the classes Kafka's tools and brokers load
# (reference/kafka.classlist): scripts/kafka-jvm and `scripts/cluster up --impl kafka` map it.
# The JVM checks it against the jars, so it is dumped with the absolute classpath they use.
KAFKA_CDS := reference/lib/kafka.jsa
reference: $(REFERENCE_STAMP) $(KAFKA_CDS)

$(REFERENCE_STAMP): reference/pom.xml
	rm -rf reference/lib
	mvn --batch-mode --quiet -f reference/pom.xml dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=lib
	@touch $@

$(KAFKA_CDS): $(REFERENCE_STAMP) reference/kafka.classlist
	java -Xshare:dump -XX:SharedClassListFile=reference/kafka.classlist \
		-XX:SharedArchiveFile=$@ -cp '$(CURDIR)/reference/lib/*' >$@.log 2>&1 \
		|| { cat $@.log; exit 1; }

# Spark's own Kafka connector (reference/spark/pom.xml, at the pinned PySpark's version) for
# `make pipeline` and the Spark tests: fetched once into reference/spark/lib, loaded with
# spark.jars. The pipeline's Python data source needs none of it.
SPARK_CONNECTOR_STAMP := reference/spark/lib/.fetched
spark-connector: $(SPARK_CONNECTOR_STAMP)

$(SPARK_CONNECTOR_STAMP): reference/spark/pom.xml
	rm -rf reference/spark/lib
	mvn --batch-mode --quiet -f reference/spark/pom.xml dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory=lib
	@touch $@

# Python reads a module's cached bytecode but, with PYTHONDONTWRITEBYTECODE set (as on some CI
# machines), never writes it: then every broker, launcher and tool process compiled our ~220
# modules again, 0.8 s of CPU per broker start. compileall writes the cache regardless, and
# only for what changed.
bytecode: setup
	@$(VENV)/bin/python -m compileall -q -j 0 broker controller zk scripts kafka_cli pipeline tests

# The same for pytest's assertion-rewritten test modules (tests/assertion_bytecode.py): each
# pytest process of `make test` collects every module, and rewrote them all again.
test-bytecode: setup
	@$(VENV)/bin/python tests/assertion_bytecode.py

up: setup bytecode
	@out="$$(scripts/cluster up $(ARGS))" || exit $$?; \
	echo "$$out"; \
	bootstrap="$$(sed -n 's/^bootstrap.servers=//p' <<<"$$out")"; \
	zookeeper="$$(sed -n 's/^zookeeper.connect=//p' <<<"$$out")"; \
	jars="$$($(VENV)/bin/python -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("pyspark").origin).parent / "jars")')"; \
	echo; \
	echo "Produce and consume with kcat:"; \
	echo "  echo hello | kcat -P -b $$bootstrap -t demo"; \
	echo "  kcat -C -b $$bootstrap -t demo -o beginning -e"; \
	echo "Or with kafka-python ($(VENV)/bin/python):"; \
	echo "  from kafka import KafkaProducer, KafkaConsumer"; \
	echo "  KafkaProducer(bootstrap_servers='$$bootstrap').send('demo', b'hello').get(10)"; \
	echo "  print(next(iter(KafkaConsumer('demo', bootstrap_servers='$$bootstrap', auto_offset_reset='earliest'))))"; \
	echo "Inspect ZooKeeper (ls /brokers/ids, get /controller):"; \
	echo "  java -cp '$$jars/*' org.apache.zookeeper.ZooKeeperMain -server $${zookeeper%%,*}"; \
	echo "  (or zkCli.sh -server $${zookeeper%%,*} from a ZooKeeper distribution)"; \
	echo "Status: make status    Stop: make down (ARGS=--wipe also deletes the data)"; \
	echo "Logs: <dir>/broker-N/broker.log and <dir>/zookeeper-N/zookeeper.log (dir: .cluster)"

down: setup
	scripts/cluster down $(ARGS)

status: setup
	scripts/cluster status $(ARGS)

# The live web view of the cluster (default dir .cluster) on http://127.0.0.1:8080/, e.g.
# make lab ARGS="--allow-actions" or ARGS="--dir /tmp/c --port 8081".
lab: setup
	scripts/lab $(ARGS)

# A class-data-sharing archive of the classes a ZooKeeper server loads (tests/zookeeper.classlist),
# for the tests' ZooKeeper servers (tests/conftest.py has them map it): 0.26 s less CPU per
# start, and the suite starts about a hundred. Dumped with the classpath the launcher gives the
# server (pyspark's jars in .venv), which the JVM checks.
ZOOKEEPER_CDS := $(VENV)/zookeeper.jsa
$(ZOOKEEPER_CDS): $(STAMP) tests/zookeeper.classlist
	@classpath="$$($(VENV)/bin/python -c 'from scripts._cluster.zookeeper import find_installation; print(find_installation().classpath)')" \
		&& java -Xshare:dump -XX:SharedClassListFile=tests/zookeeper.classlist \
		-XX:SharedArchiveFile=$@ -cp "$$classpath" >$@.log 2>&1 || { cat $@.log; exit 1; }

# Four workers, whole modules each (--dist loadfile), handed out in collection order:
# tests/conftest.py puts the longest modules first. A worker's modules share one cluster unless
# they damage it (tests/integration/conftest.py, `cluster`). Four on 2 cores, because a test
# spends much of its time waiting on its cluster and clients (fresh clones, 2026-11-29: 602 s
# with three, 576 s with four; the cores were a quarter idle in the last minutes with three). Spark's tests run beside them in a
# pytest of their own (one SparkSession for all three modules): alone, they kept the cores less
# than half busy for 3 minutes after the rest (2026-11-29: 544 s + 181 s run one after the
# other). Their output is printed when both are done; each run ends with its ten slowest tests.
SPARK_TEST_LOG := .pytest-spark.log
test: setup spark-connector bytecode test-bytecode $(ZOOKEEPER_CDS)
	@$(VENV)/bin/pytest -q --durations=10 -m spark tests >$(SPARK_TEST_LOG) 2>&1 & spark=$$!; \
	$(VENV)/bin/pytest -q -n 4 --dist loadfile --no-loadscope-reorder --durations=10 -m "not spark" tests; \
	rest=$$?; wait $$spark; spark_status=$$?; \
	echo; echo "== Spark's tests (pytest -m spark, run beside the rest) =="; cat $(SPARK_TEST_LOG); \
	test $$rest -eq 0 && test $$spark_status -eq 0

test-unit: setup
	$(VENV)/bin/pytest -q -n 2 tests/unit

# The example Spark pipeline (docs/ecosystem.md, "The Spark pipeline"), on Spark's Kafka
# connector; e.g. ARGS="--duration-s 120", or ARGS="--connector python" for the Python data source.
pipeline: setup spark-connector
	$(VENV)/bin/python -m pipeline.example $(ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy broker controller zk scripts kafka_cli pipeline
