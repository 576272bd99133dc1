import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.LeaderAndIsrRequestData;
import org.apache.kafka.common.message.LeaderAndIsrRequestData.LeaderAndIsrLiveLeader;
import org.apache.kafka.common.message.LeaderAndIsrRequestData.LeaderAndIsrPartitionState;
import org.apache.kafka.common.message.LeaderAndIsrRequestData.LeaderAndIsrTopicState;
import org.apache.kafka.common.message.LeaderAndIsrResponseData;
import org.apache.kafka.common.message.LeaderAndIsrResponseData.LeaderAndIsrPartitionError;
import org.apache.kafka.common.message.LeaderAndIsrResponseData.LeaderAndIsrTopicError;
import org.apache.kafka.common.message.LeaderAndIsrResponseData.LeaderAndIsrTopicErrorCollection;
import org.apache.kafka.common.message.StopReplicaRequestData;
import org.apache.kafka.common.message.StopReplicaRequestData.StopReplicaPartitionState;
import org.apache.kafka.common.message.StopReplicaRequestData.StopReplicaPartitionV0;
import org.apache.kafka.common.message.StopReplicaRequestData.StopReplicaTopicState;
import org.apache.kafka.common.message.StopReplicaRequestData.StopReplicaTopicV1;
import org.apache.kafka.common.message.StopReplicaResponseData;
import org.apache.kafka.common.message.StopReplicaResponseData.StopReplicaPartitionError;
import org.apache.kafka.common.message.UpdateMetadataRequestData;
import org.apache.kafka.common.message.UpdateMetadataRequestData.UpdateMetadataBroker;
import org.apache.kafka.common.message.UpdateMetadataRequestData.UpdateMetadataEndpoint;
import org.apache.kafka.common.message.UpdateMetadataRequestData.UpdateMetadataPartitionState;
import org.apache.kafka.common.message.UpdateMetadataRequestData.UpdateMetadataTopicState;
import org.apache.kafka.common.message.UpdateMetadataResponseData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Kafka 3.9's own encoding of LeaderAndIsr, StopReplica and UpdateMetadata, requests and
 * responses, at every version, of the values tests/reference/test_controller_request_schemas.py
 * builds with our schemas. One line each: "request|response API_KEY VERSION HEX".
 */
public class ControllerRequestBytes {
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

    static LeaderAndIsrPartitionState leaderAndIsrState(short version) {
        LeaderAndIsrPartitionState state = new LeaderAndIsrPartitionState()
            .setPartitionIndex(0).setControllerEpoch(3).setLeader(2).setLeaderEpoch(4)
            .setIsr(Arrays.asList(2, 3)).setPartitionEpoch(7).setReplicas(Arrays.asList(1, 2, 3));
        if (version < 2) state.setTopicName("t");
        if (version >= 1) state.setIsNew(true);
        if (version >= 3) {
            state.setAddingReplicas(Arrays.asList(3)).setRemovingReplicas(Arrays.asList(1));
        }
        if (version >= 6) state.setLeaderRecoveryState((byte) 1);
        return state;
    }

    static void leaderAndIsr(short version) {
        LeaderAndIsrRequestData request = new LeaderAndIsrRequestData()
            .setControllerId(1).setControllerEpoch(3);
        if (version >= 2) request.setBrokerEpoch(55L);
        if (version < 2) {
            request.setUngroupedPartitionStates(Collections.singletonList(leaderAndIsrState(version)));
        } else {
            LeaderAndIsrTopicState topic = new LeaderAndIsrTopicState().setTopicName("t")
                .setPartitionStates(Collections.singletonList(leaderAndIsrState(version)));
            if (version >= 5) topic.setTopicId(TOPIC_ID);
            request.setTopicStates(Collections.singletonList(topic));
        }
        request.setLiveLeaders(Collections.singletonList(
            new LeaderAndIsrLiveLeader().setBrokerId(2).setHostName("h").setPort(9092)));
        print("request", 4, version, request);

        LeaderAndIsrResponseData response = new LeaderAndIsrResponseData().setErrorCode((short) 0);
        LeaderAndIsrPartitionError error = new LeaderAndIsrPartitionError()
            .setPartitionIndex(0).setErrorCode((short) 11);
        if (version < 5) {
            response.setPartitionErrors(Collections.singletonList(error.setTopicName("t")));
        } else {
            LeaderAndIsrTopicErrorCollection topics = new LeaderAndIsrTopicErrorCollection();
            topics.add(new LeaderAndIsrTopicError().setTopicId(TOPIC_ID)
                .setPartitionErrors(Collections.singletonList(error)));
            response.setTopics(topics);
        }
        print("response", 4, version, response);
    }

    static void stopReplica(short version) {
        StopReplicaRequestData request = new StopReplicaRequestData()
            .setControllerId(1).setControllerEpoch(3);
        if (version >= 1) request.setBrokerEpoch(55L);
        if (version <= 2) request.setDeletePartitions(true);
        if (version == 0) {
            request.setUngroupedPartitions(Collections.singletonList(
                new StopReplicaPartitionV0().setTopicName("t").setPartitionIndex(0)));
        } else if (version <= 2) {
            request.setTopics(Collections.singletonList(
                new StopReplicaTopicV1().setName("t").setPartitionIndexes(Arrays.asList(0, 1))));
        } else {
            request.setTopicStates(Collections.singletonList(new StopReplicaTopicState()
                .setTopicName("t")
                .setPartitionStates(Collections.singletonList(new StopReplicaPartitionState()
                    .setPartitionIndex(0).setLeaderEpoch(4).setDeletePartition(true)))));
        }
        print("request", 5, version, request);
        StopReplicaResponseData response = new StopReplicaResponseData().setErrorCode((short) 0)
            .setPartitionErrors(Collections.singletonList(new StopReplicaPartitionError()
                .setTopicName("t").setPartitionIndex(0).setErrorCode((short) 79)));
        print("response", 5, version, response);
    }

    static void updateMetadata(short version) {
        UpdateMetadataPartitionState state = new UpdateMetadataPartitionState()
            .setPartitionIndex(0).setControllerEpoch(3).setLeader(2).setLeaderEpoch(4)
            .setIsr(Arrays.asList(2, 3)).setZkVersion(7).setReplicas(Arrays.asList(1, 2, 3));
        if (version < 5) state.setTopicName("t");
        if (version >= 4) state.setOfflineReplicas(Arrays.asList(3));
        UpdateMetadataRequestData request = new UpdateMetadataRequestData()
            .setControllerId(1).setControllerEpoch(3);
        if (version >= 5) request.setBrokerEpoch(55L);
        if (version >= 8) request.setType((byte) 2);
        if (version < 5) {
            request.setUngroupedPartitionStates(Collections.singletonList(state));
        } else {
            UpdateMetadataTopicState topic = new UpdateMetadataTopicState().setTopicName("t")
                .setPartitionStates(Collections.singletonList(state));
            if (version >= 7) topic.setTopicId(TOPIC_ID);
            request.setTopicStates(Collections.singletonList(topic));
        }
        UpdateMetadataBroker broker = new UpdateMetadataBroker().setId(1);
        if (version == 0) {
            broker.setV0Host("h").setV0Port(9092);
        } else {
            UpdateMetadataEndpoint endpoint = new UpdateMetadataEndpoint()
                .setPort(9092).setHost("h").setSecurityProtocol((short) 0);
            if (version >= 3) endpoint.setListener("PLAINTEXT");
            broker.setEndpoints(Collections.singletonList(endpoint));
        }
        if (version >= 2) broker.setRack("r");
        List<UpdateMetadataBroker> brokers = Collections.singletonList(broker);
        request.setLiveBrokers(brokers);
        print("request", 6, version, request);
        print("response", 6, version, new UpdateMetadataResponseData().setErrorCode((short) 0));
    }

    public static void main(String[] args) {
        for (short version = 0; version <= 7; version++) leaderAndIsr(version);
        for (short version = 0; version <= 4; version++) stopReplica(version);
        for (short version = 0; version <= 8; version++) updateMetadata(version);
    }
}
