# One broker image (with the kafka-* tools); docker-compose.yml runs three of them against a
# three-server ZooKeeper ensemble.
FROM python:3.11-slim

WORKDIR /opt/broker
COPY pyproject.toml ./
COPY broker ./broker
COPY controller ./controller
COPY zk ./zk
COPY pipeline ./pipeline
COPY kafka_cli ./kafka_cli
RUN pip install --no-cache-dir '.[tools]'
# The launcher's TLS material maker: docker-compose.yml's SASL_SSL example (profile sasl_ssl)
# makes its CA and broker certificates with it.
COPY scripts/_cluster/tls_material.py ./tls_material.py

# Shared defaults; each broker's id and listeners come as --override arguments.
RUN mkdir -p /etc/kafka /var/lib/kafka/data && printf '%s\n' \
      'zookeeper.connect=zookeeper-1:2181,zookeeper-2:2181,zookeeper-3:2181' \
      'log.dirs=/var/lib/kafka/data' \
      'listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT' \
      'inter.broker.listener.name=INTERNAL' \
      > /etc/kafka/server.properties

VOLUME /var/lib/kafka/data
ENTRYPOINT ["python", "-m", "broker", "/etc/kafka/server.properties"]
