import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A word count in the Kafka Streams DSL, for tests/integration/test_streams.py.
 *
 * <p>Lines of INPUT are split into lower-case words, re-keyed by word (the repartition topic
 * APP-words-repartition), counted in a persistent RocksDB store "counts" (changelog topic
 * APP-counts-changelog) and each new count is written to OUTPUT (word -> count as a decimal
 * string). The record cache is off, so every increment reaches OUTPUT.
 *
 * <p>Usage: WordCount BOOTSTRAP APPLICATION_ID STATE_DIR PROCESSING_GUARANTEE INPUT OUTPUT
 * [REPLICATION_FACTOR]: the internal topics' replication factor, by default the broker's
 * default.replication.factor (Kafka Streams' own default, -1).
 *
 * <p>Prints one line per event on stdout, for the test to wait on: {@code state OLD NEW} on
 * each KafkaStreams state change, {@code restore-start|restore-end TOPIC PARTITION RECORDS} for
 * each changelog partition restored into the store, {@code thread-error CLASS MESSAGE} if a
 * stream thread dies (the application then shuts down), and {@code closed} after a SIGTERM closed the application.
 */
public final class WordCount {
    private WordCount() {}

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 6 && args.length != 7) {
            System.err.println("usage: WordCount BOOTSTRAP APPLICATION_ID STATE_DIR"
                + " PROCESSING_GUARANTEE INPUT OUTPUT [REPLICATION_FACTOR]");
            System.exit(2);
        }
        String input = args[4];
        String output = args[5];

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[3]);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG,
            args.length == 7 ? Integer.parseInt(args[6]) : -1);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // A SIGKILLed instance's group membership lapses after its session timeout; the
        // restarted instance's first rebalance waits for that. The broker's minimum, to keep
        // the tests short.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines =
            builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((newState, oldState) -> say("state " + oldState + " " + newState));
        streams.setUncaughtExceptionHandler(error -> {
            say("thread-error " + error.getClass().getName() + " " + error.getMessage());
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long start, long end) {
                say("restore-start " + partition.topic() + " " + partition.partition() + " "
                    + (end - start));
            }

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long end, long count) {}

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long total) {
                say("restore-end " + partition.topic() + " " + partition.partition() + " " + total);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            say("closed");
            closed.countDown();
        }));
        streams.start();
        closed.await();
    }
}
