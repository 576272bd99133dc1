# One broker image; docker-compose.yml runs three of them against ZooKeeper.
FROM python:3.11-slim

WORKDIR /opt/broker
COPY pyproject.toml ./
COPY broker ./broker
COPY controller ./controller
COPY zk ./zk
COPY pipeline ./pipeline
RUN pip install --no-cache-dir .

# Shared defaults; each broker's id and listeners come as --override arguments.
RUN mkdir -p /etc/kafka /var/lib/kafka/data && printf '%s\n' \
      'zookeeper.connect=zookeeper:2181' \
      'log.dirs=/var/lib/kafka/data' \
      'listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT' \
      'inter.broker.listener.name=INTERNAL' \
      > /etc/kafka/server.properties

VOLUME /var/lib/kafka/data
ENTRYPOINT ["python", "-m", "broker", "/etc/kafka/server.properties"]
