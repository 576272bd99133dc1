import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AllocateProducerIdsRequestData;
import org.apache.kafka.common.message.AllocateProducerIdsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionRequestData.BrokerState;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Kafka 3.9's own encoding of the requests brokers send the controller that our controller
 * serves (AlterPartition v0-v3, AllocateProducerIds v0), requests and responses, of the values
 * tests/reference/test_served_request_schemas.py builds with our schemas. One line each:
 * "request|response API_KEY VERSION HEX".
 */
public class ServedRequestBytes {
    static final Uuid TOPIC_ID = new Uuid(1L, 2L);

    static String hex(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buffer), cache, version);
        StringBuilder text = new StringBuilder();
        for (byte b : buffer.array()) {
            text.append(String.format("%02x", b));
        }
        return text.toString();
    }

    static void print(String kind, int apiKey, short version, Message message) {
        System.out.println(kind + " " + apiKey + " " + version + " " + hex(message, version));
    }

    static void alterPartition(short version) {
        AlterPartitionRequestData.PartitionData partition = new AlterPartitionRequestData.PartitionData()
            .setPartitionIndex(0).setLeaderEpoch(4).setPartitionEpoch(7);
        if (version >= 3) {
            partition.setNewIsrWithEpochs(Arrays.asList(
                new BrokerState().setBrokerId(1).setBrokerEpoch(55L),
                new BrokerState().setBrokerId(2).setBrokerEpoch(-1L)));
        } else {
            partition.setNewIsr(Arrays.asList(1, 2));
        }
        if (version >= 1) partition.setLeaderRecoveryState((byte) 1);
        AlterPartitionRequestData.TopicData topic = new AlterPartitionRequestData.TopicData()
            .setPartitions(Collections.singletonList(partition));
        if (version >= 2) topic.setTopicId(TOPIC_ID); else topic.setTopicName("t");
        AlterPartitionRequestData request = new AlterPartitionRequestData()
            .setBrokerId(1).setBrokerEpoch(55L).setTopics(Collections.singletonList(topic));
        print("request", 56, version, request);

        AlterPartitionResponseData.PartitionData answer = new AlterPartitionResponseData.PartitionData()
            .setPartitionIndex(0).setErrorCode((short) 0).setLeaderId(1).setLeaderEpoch(4)
            .setIsr(Arrays.asList(1, 2)).setPartitionEpoch(8);
        if (version >= 1) answer.setLeaderRecoveryState((byte) 1);
        AlterPartitionResponseData.TopicData answered = new AlterPartitionResponseData.TopicData()
            .setPartitions(Collections.singletonList(answer));
        if (version >= 2) answered.setTopicId(TOPIC_ID); else answered.setTopicName("t");
        AlterPartitionResponseData response = new AlterPartitionResponseData()
            .setThrottleTimeMs(5).setErrorCode((short) 0)
            .setTopics(Collections.singletonList(answered));
        print("response", 56, version, response);
    }

    static void allocateProducerIds() {
        short version = 0;
        print("request", 67, version,
            new AllocateProducerIdsRequestData().setBrokerId(1).setBrokerEpoch(55L));
        print("response", 67, version, new AllocateProducerIdsResponseData()
            .setThrottleTimeMs(5).setErrorCode((short) 0)
            .setProducerIdStart(1000L).setProducerIdLen(1000));
    }

    public static void main(String[] args) {
        for (short version = 0; version <= 3; version++) alterPartition(version);
        allocateProducerIds();
    }
}
