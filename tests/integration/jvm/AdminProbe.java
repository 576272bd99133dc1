import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Exercises the Admin API calls of issue 21 against one cluster and prints one JSON line per
 * call: {"call": NAME, "result": ...} or {"call": NAME, "error": EXCEPTION_CLASS}.
 *
 * <p>tests/integration/admin_client.py runs it against our brokers and against Kafka 3.9 and
 * compares the lines. Everything printed is sorted, so that the output depends on the brokers'
 * answers and not on the iteration order of the client's hash maps. Run after the brokers are up:
 * java -cp DIR:reference/lib/* AdminProbe BOOTSTRAP
 */
public final class AdminProbe {
    static final String IDS_TOPIC = "admin-ids";
    static final String MOVE_TOPIC = "admin-move";
    static final String GROUP = "admin-probe-group";
    static final String CONSUMER_CLIENT_ID = "admin-probe-consumer";
    // Explicit CreateTime timestamps, out of order, so that the max-timestamp offset is not the
    // latest one and every batch's bytes (hence the log sizes) are the same on both clusters.
    static final long[] TIMESTAMPS = {1_000L, 3_000L, 2_000L};
    static final Duration WAIT = Duration.ofSeconds(30);
    static final long POLL_PAUSE_MS = 200L;

    private final ObjectMapper json = new ObjectMapper();
    private final String bootstrap;
    private final Admin admin;

    private AdminProbe(String bootstrap) {
        this.bootstrap = bootstrap;
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "admin-probe");
        this.admin = Admin.create(props);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: AdminProbe BOOTSTRAP_SERVERS");
            System.exit(2);
        }
        AdminProbe probe = new AdminProbe(args[0]);
        try {
            probe.run();
        } finally {
            probe.admin.close(WAIT);
        }
    }

    /** One call's body: what it returns is printed as the call's result. */
    private interface Body {
        Object call() throws Exception;
    }

    /** Runs one call and prints its line; a failing call does not stop the ones after it. */
    private void call(String name, Body body) throws Exception {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("call", name);
        try {
            line.put("result", body.call());
        } catch (ExecutionException e) {
            line.put("error", errorName(e.getCause()));
        } catch (Exception e) {
            line.put("error", errorName(e));
        }
        System.out.println(json.writeValueAsString(line));
        System.out.flush();
    }

    private static String errorName(Throwable error) {
        return error == null ? "null" : error.getClass().getSimpleName();
    }

    private void run() throws Exception {
        Map<String, Uuid> topicIds = new TreeMap<>();

        call("describeCluster", () -> {
            // Asks DescribeCluster (Kafka's admin falls back to Metadata where it is not served).
            DescribeClusterResult cluster = admin.describeCluster(
                    new DescribeClusterOptions().includeAuthorizedOperations(true));
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("nodes", nodes(cluster.nodes().get()));
            out.put("controller", nodeId(cluster.controller().get()));
            out.put("clusterId", cluster.clusterId().get());
            out.put("authorizedOperations", new TreeSet<>(cluster.authorizedOperations().get()
                    .stream().map(Object::toString).collect(Collectors.toList())));
            return out;
        });

        call("createTopics", () -> {
            // Explicit assignments: Kafka would place replicas from a random broker otherwise.
            // A sorted map, so that the request lists the partitions in the same order each run.
            Map<Integer, List<Integer>> assignment = new TreeMap<>();
            assignment.put(0, List.of(1, 2));
            assignment.put(1, List.of(2, 3));
            // The records' timestamps are from 1970: under the default retention.ms a retention
            // check (Kafka's first runs 30 s after its start) would delete them mid-probe.
            NewTopic ids = new NewTopic(IDS_TOPIC, assignment)
                    .configs(Map.of("retention.ms", "-1"));
            List<NewTopic> topics = List.of(ids, new NewTopic(MOVE_TOPIC, assignment));
            CreateTopicsResult created = admin.createTopics(topics);
            created.all().get();
            Map<String, Object> out = new TreeMap<>();
            for (NewTopic topic : topics) {
                Uuid id = created.topicId(topic.name()).get();
                topicIds.put(topic.name(), id);
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("topicId", id.toString());
                one.put("numPartitions", created.numPartitions(topic.name()).get());
                one.put("replicationFactor", created.replicationFactor(topic.name()).get());
                one.put("config", configEntries(created.config(topic.name()).get()));
                out.put(topic.name(), one);
            }
            return out;
        });

        call("describeTopics by id",
                () -> describeSettled(topicIds.values(), AdminProbe::everyPartitionLed));
        call("describeTopics unknown id",
                () -> describeByIds(admin, List.of(Uuid.randomUuid())));

        call("produce", () -> {
            List<Object> out = new ArrayList<>();
            try (KafkaProducer<String, String> producer = producer()) {
                for (int i = 0; i < TIMESTAMPS.length; i++) {
                    ProducerRecord<String, String> record =
                            new ProducerRecord<>(IDS_TOPIC, 0, TIMESTAMPS[i], "k" + i, "v" + i);
                    // One record per batch (synchronous sends), for deterministic batches.
                    RecordMetadata sent = producer.send(record).get();
                    Map<String, Object> one = new LinkedHashMap<>();
                    one.put("partition", sent.partition());
                    one.put("offset", sent.offset());
                    one.put("timestamp", sent.timestamp());
                    out.add(one);
                }
            }
            return out;
        });

        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
        specs.put("forTimestamp 1500", OffsetSpec.forTimestamp(1_500L));
        specs.put("forTimestamp 3000", OffsetSpec.forTimestamp(3_000L));
        specs.put("forTimestamp 5000", OffsetSpec.forTimestamp(5_000L));
        for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
            call("listOffsets " + spec.getKey(), () -> listOffsets(IDS_TOPIC, 2, spec.getValue()));
        }

        // On the topic without records, so that deleteRecords (which needs "delete" in
        // cleanup.policy) does not depend on what the APPEND below left.
        ConfigResource moveTopic = new ConfigResource(ConfigResource.Type.TOPIC, MOVE_TOPIC);
        call("incrementalAlterConfigs", () -> {
            List<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"),
                            AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
                            AlterConfigOp.OpType.APPEND),
                    new AlterConfigOp(new ConfigEntry("segment.ms", ""),
                            AlterConfigOp.OpType.DELETE));
            admin.incrementalAlterConfigs(Map.of(moveTopic, ops)).all().get();
            return "ok";
        });
        call("incrementalAlterConfigs unknown name", () -> {
            List<AlterConfigOp> ops = List.of(new AlterConfigOp(
                    new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET));
            admin.incrementalAlterConfigs(Map.of(moveTopic, ops)).all().get();
            return "ok";
        });
        call("describeConfigs", () -> {
            return configEntries(
                    admin.describeConfigs(List.of(moveTopic)).all().get().get(moveTopic));
        });

        consumerGroupCalls();

        call("deleteRecords", () -> {
            Map<TopicPartition, RecordsToDelete> request = Map.of(
                    new TopicPartition(IDS_TOPIC, 0), RecordsToDelete.beforeOffset(1L));
            return lowWatermarks(request);
        });
        call("deleteRecords beyond the high watermark", () -> {
            Map<TopicPartition, RecordsToDelete> request = Map.of(
                    new TopicPartition(IDS_TOPIC, 1), RecordsToDelete.beforeOffset(100L));
            return lowWatermarks(request);
        });
        call("listOffsets earliest after deleteRecords",
                () -> listOffsets(IDS_TOPIC, 2, OffsetSpec.earliest()));

        call("describeLogDirs", () -> {
            Map<Integer, Map<String, LogDirDescription>> dirs =
                    admin.describeLogDirs(List.of(1, 2, 3)).allDescriptions().get();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<Integer, Map<String, LogDirDescription>> broker : dirs.entrySet()) {
                Map<String, Object> perDir = new TreeMap<>();
                for (Map.Entry<String, LogDirDescription> dir : broker.getValue().entrySet()) {
                    perDir.put(dir.getKey(), logDir(dir.getValue()));
                }
                out.put(String.valueOf(broker.getKey()), perDir);
            }
            return out;
        });

        // ZooKeeper-mode brokers support no features: the upgrade is refused per feature.
        call("updateFeatures", () -> {
            admin.updateFeatures(
                    Map.of("test.feature", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                    new UpdateFeaturesOptions()).all().get();
            return "updated";
        });
        call("describeFeatures", () -> {
            FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("finalized", new TreeMap<>(features.finalizedFeatures()).toString());
            out.put("epoch", features.finalizedFeaturesEpoch().toString());
            out.put("supported", new TreeMap<>(features.supportedFeatures()).toString());
            return out;
        });

        reassignmentCalls();
    }

    /**
     * describeTopics by id, repeated until `settled` holds or WAIT has passed (then the last
     * answer is printed as it is). A broker learns of a change from the controller a moment
     * after the call that made it returned, and Admin asks whichever broker is least loaded, so
     * a single describe right after a change may see the previous state, on Kafka as here.
     */
    private Object describeSettled(Collection<Uuid> ids,
            Predicate<Collection<TopicDescription>> settled) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            try {
                Map<Uuid, TopicDescription> described =
                        admin.describeTopics(TopicCollection.ofTopicIds(ids)).allTopicIds().get();
                if (settled.test(described.values()) || System.nanoTime() >= deadline) {
                    return rendered(described);
                }
            } catch (ExecutionException e) {
                if (System.nanoTime() >= deadline) {
                    throw e;
                }
            }
            Thread.sleep(POLL_PAUSE_MS);
        }
    }

    private static boolean everyPartitionLed(Collection<TopicDescription> topics) {
        return topics.stream().flatMap(topic -> topic.partitions().stream())
                .allMatch(partition -> nodeId(partition.leader()) != null);
    }

    private static boolean preferredLeads(Collection<TopicDescription> topics) {
        return topics.stream().flatMap(topic -> topic.partitions().stream())
                .allMatch(partition -> !partition.replicas().isEmpty()
                        && partition.replicas().get(0).equals(partition.leader()));
    }

    private static List<Integer> replicas(Collection<TopicDescription> topics, int partition) {
        return topics.stream().flatMap(topic -> topic.partitions().stream())
                .filter(info -> info.partition() == partition)
                .findFirst().map(info -> ids(info.replicas())).orElse(List.of());
    }

    private static Object describeByIds(Admin admin, Collection<Uuid> ids) throws Exception {
        return rendered(admin.describeTopics(TopicCollection.ofTopicIds(ids)).allTopicIds().get());
    }

    private static Object rendered(Map<Uuid, TopicDescription> described) {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<Uuid, TopicDescription> entry : described.entrySet()) {
            TopicDescription topic = entry.getValue();
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("requestedId", entry.getKey().toString());
            one.put("topicId", topic.topicId().toString());
            one.put("internal", topic.isInternal());
            one.put("partitions", partitions(topic));
            out.put(topic.name(), one);
        }
        return out;
    }

    private static Map<String, Object> configEntries(Config config) {
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry entry : config.entries()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("value", entry.value());
            one.put("source", entry.source().name());
            one.put("readOnly", entry.isReadOnly());
            one.put("sensitive", entry.isSensitive());
            // CreateTopics answers carry no type (Admin leaves it null there).
            one.put("type", entry.type() == null ? null : entry.type().name());
            out.put(entry.name(), one);
        }
        return out;
    }

    private static List<Object> partitions(TopicDescription topic) {
        List<Object> out = new ArrayList<>();
        for (TopicPartitionInfo partition : topic.partitions()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("partition", partition.partition());
            one.put("leader", nodeId(partition.leader()));
            one.put("replicas", ids(partition.replicas()));
            one.put("isr", ids(partition.isr()));
            out.add(one);
        }
        return out;
    }

    private Object listOffsets(String topic, int partitionCount, OffsetSpec spec) throws Exception {
        Map<TopicPartition, OffsetSpec> request = new LinkedHashMap<>();
        for (int p = 0; p < partitionCount; p++) {
            request.put(new TopicPartition(topic, p), spec);
        }
        Map<TopicPartition, ListOffsetsResultInfo> offsets = admin.listOffsets(request).all().get();
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResultInfo> entry : offsets.entrySet()) {
            ListOffsetsResultInfo info = entry.getValue();
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("offset", info.offset());
            one.put("timestamp", info.timestamp());
            one.put("leaderEpoch", info.leaderEpoch().orElse(null));
            out.put(entry.getKey().toString(), one);
        }
        return out;
    }

    private Object lowWatermarks(Map<TopicPartition, RecordsToDelete> request) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, KafkaFuture<DeletedRecords>> entry
                : admin.deleteRecords(request).lowWatermarks().entrySet()) {
            out.put(entry.getKey().toString(), entry.getValue().get().lowWatermark());
        }
        return out;
    }

    private static Map<String, Object> logDir(LogDirDescription dir) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("error", dir.error() == null ? null : errorName(dir.error()));
        // Only this program's topics: the cluster may hold others, from other tests.
        Map<String, Object> replicas = new TreeMap<>();
        for (Map.Entry<TopicPartition, ReplicaInfo> entry : dir.replicaInfos().entrySet()) {
            String topic = entry.getKey().topic();
            if (!topic.equals(IDS_TOPIC) && !topic.equals(MOVE_TOPIC)) {
                continue;
            }
            ReplicaInfo replica = entry.getValue();
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("size", replica.size());
            one.put("offsetLag", replica.offsetLag());
            one.put("isFuture", replica.isFuture());
            replicas.put(entry.getKey().toString(), one);
        }
        out.put("replicas", replicas);
        out.put("totalBytes", dir.totalBytes().isPresent() ? dir.totalBytes().getAsLong() : null);
        out.put("usableBytes", dir.usableBytes().isPresent() ? dir.usableBytes().getAsLong() : null);
        return out;
    }

    private void consumerGroupCalls() throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, CONSUMER_CLIENT_ID);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            call("consume and commitSync", () -> {
                consumer.subscribe(List.of(IDS_TOPIC));
                List<String> seen = new ArrayList<>();
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (seen.size() < TIMESTAMPS.length && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(500)).forEach(record -> seen.add(
                            record.partition() + "/" + record.offset() + "/" + record.key()));
                }
                // commitSync() commits only the partitions whose position is known; asking for
                // each one's position first makes that every assigned partition, whatever
                // partition's records arrived first.
                for (TopicPartition partition : consumer.assignment()) {
                    consumer.position(partition, WAIT);
                }
                consumer.commitSync(WAIT);
                return seen;
            });
            call("describeConsumerGroups with a member", this::describeGroup);
            call("listConsumerGroupOffsets", () -> {
                Map<TopicPartition, OffsetAndMetadata> offsets = admin
                        .listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
                    OffsetAndMetadata committed = entry.getValue();
                    Map<String, Object> one = new LinkedHashMap<>();
                    one.put("offset", committed.offset());
                    one.put("leaderEpoch", committed.leaderEpoch().orElse(null));
                    one.put("metadata", committed.metadata());
                    out.put(entry.getKey().toString(), one);
                }
                return out;
            });
        }
        call("describeConsumerGroups after the member left", this::describeGroup);
    }

    private Object describeGroup() throws Exception {
        ConsumerGroupDescription group =
                admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("groupId", group.groupId());
        out.put("simple", group.isSimpleConsumerGroup());
        out.put("type", String.valueOf(group.type()));
        out.put("state", String.valueOf(group.state()));
        out.put("partitionAssignor", group.partitionAssignor());
        out.put("coordinator", nodeId(group.coordinator()));
        // The coordinator is the leader of the group's __consumer_offsets partition, printed so
        // the comparison can check it without depending on where Kafka placed that partition.
        out.put("offsetsPartitionLeader", offsetsPartitionLeader());
        List<Object> members = new ArrayList<>();
        for (MemberDescription member : group.members()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("consumerId", member.consumerId());
            one.put("groupInstanceId", member.groupInstanceId().orElse(null));
            one.put("clientId", member.clientId());
            one.put("host", member.host());
            one.put("assignment", member.assignment().topicPartitions().stream()
                    .map(TopicPartition::toString).sorted().collect(Collectors.toList()));
            members.add(one);
        }
        out.put("members", members);
        return out;
    }

    private Integer offsetsPartitionLeader() throws Exception {
        TopicDescription offsets = admin.describeTopics(List.of("__consumer_offsets"))
                .allTopicNames().get().get("__consumer_offsets");
        int partition = Utils.abs(GROUP.hashCode()) % offsets.partitions().size();
        return nodeId(offsets.partitions().get(partition).leader());
    }

    private void reassignmentCalls() throws Exception {
        TopicPartition reordered = new TopicPartition(MOVE_TOPIC, 0);
        TopicPartition moved = new TopicPartition(MOVE_TOPIC, 1);
        call("alterPartitionReassignments", () -> {
            // Partition 0 keeps its replicas in another order: its leader (1) stays, and is no
            // longer the preferred replica, which electLeaders then changes. Partition 1 drops
            // its leader (2) for broker 1, so a new leader is elected by the reassignment.
            Map<TopicPartition, Optional<NewPartitionReassignment>> request = new LinkedHashMap<>();
            request.put(reordered, Optional.of(new NewPartitionReassignment(List.of(2, 1))));
            request.put(moved, Optional.of(new NewPartitionReassignment(List.of(3, 1))));
            admin.alterPartitionReassignments(request).all().get();
            return "ok";
        });
        call("alterPartitionReassignments cancel none in progress", () -> {
            Map<TopicPartition, Optional<NewPartitionReassignment>> request =
                    Map.of(new TopicPartition(IDS_TOPIC, 0), Optional.empty());
            admin.alterPartitionReassignments(request).all().get();
            return "ok";
        });
        call("listPartitionReassignments until none", () -> {
            // A bounded poll: how many rounds it takes depends on replication timing.
            long deadline = System.nanoTime() + WAIT.toNanos();
            Map<TopicPartition, PartitionReassignment> ongoing =
                    admin.listPartitionReassignments(Set.of(reordered, moved)).reassignments().get();
            while (!ongoing.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(POLL_PAUSE_MS);
                ongoing = admin.listPartitionReassignments(Set.of(reordered, moved))
                        .reassignments().get();
            }
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<TopicPartition, PartitionReassignment> entry : ongoing.entrySet()) {
                PartitionReassignment reassignment = entry.getValue();
                Map<String, Object> one = new LinkedHashMap<>();
                one.put("replicas", reassignment.replicas());
                one.put("adding", reassignment.addingReplicas());
                one.put("removing", reassignment.removingReplicas());
                out.put(entry.getKey().toString(), one);
            }
            return out;
        });
        call("describeTopics after reassignment", () -> describeSettled(
                List.of(topicId(MOVE_TOPIC)),
                topics -> replicas(topics, 0).equals(List.of(2, 1))
                        && replicas(topics, 1).equals(List.of(3, 1))));
        call("electLeaders PREFERRED", () -> {
            Map<TopicPartition, Optional<Throwable>> results = admin
                    .electLeaders(ElectionType.PREFERRED, Set.of(reordered, moved))
                    .partitions().get();
            Map<String, Object> out = new TreeMap<>();
            for (Map.Entry<TopicPartition, Optional<Throwable>> entry : results.entrySet()) {
                out.put(entry.getKey().toString(),
                        entry.getValue().map(AdminProbe::errorName).orElse("elected"));
            }
            return out;
        });
        call("describeTopics after electLeaders",
                () -> describeSettled(List.of(topicId(MOVE_TOPIC)), AdminProbe::preferredLeads));
    }

    /** A topic id by name lookup (describeTopics by name), independent of createTopics. */
    private Uuid topicId(String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId();
    }

    private KafkaProducer<String, String> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "admin-probe-producer");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(props);
    }

    private static List<Object> nodes(Collection<Node> nodes) {
        return nodes.stream()
                .sorted(Comparator.comparingInt(Node::id))
                .map(node -> {
                    Map<String, Object> one = new LinkedHashMap<>();
                    one.put("id", node.id());
                    one.put("address", node.host() + ":" + node.port());
                    one.put("rack", node.rack());
                    return one;
                })
                .collect(Collectors.toList());
    }

    private static Integer nodeId(Node node) {
        return node == null || node.isEmpty() ? null : node.id();
    }

    /** Broker ids in the broker's order: the replica order is the preference order. */
    private static List<Integer> ids(List<Node> nodes) {
        return nodes.stream().map(Node::id).collect(Collectors.toList());
    }
}
