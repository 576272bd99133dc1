import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;

/**
 * Kafka 3.9's replica placement (AdminUtils.assignReplicasToBrokers) for the cases
 * tests/reference/test_replica_assignment.py sends on stdin, one a line:
 * "BROKERS PARTITIONS REPLICATION_FACTOR FIXED_START_INDEX START_PARTITION_ID", BROKERS a comma
 * list of "id:rack" ("id:" for a broker without a rack). One answer line each: the assignment
 * as "partition=replica,replica;..." in partition order, or "error SIMPLE_CLASS_NAME".
 */
public class ReplicaAssignment {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            String[] fields = line.trim().split(" ");
            List<BrokerMetadata> brokers = new ArrayList<>();
            for (String broker : fields[0].split(",")) {
                String[] idRack = broker.split(":", -1);
                Optional<String> rack = idRack[1].isEmpty() ? Optional.empty() : Optional.of(idRack[1]);
                brokers.add(new BrokerMetadata(Integer.parseInt(idRack[0]), rack));
            }
            try {
                Map<Integer, List<Integer>> placed = AdminUtils.assignReplicasToBrokers(
                    brokers, Integer.parseInt(fields[1]), Integer.parseInt(fields[2]),
                    Integer.parseInt(fields[3]), Integer.parseInt(fields[4]));
                StringBuilder answer = new StringBuilder();
                for (Map.Entry<Integer, List<Integer>> entry : new TreeMap<>(placed).entrySet()) {
                    if (answer.length() > 0) answer.append(';');
                    answer.append(entry.getKey()).append('=');
                    List<Integer> replicas = entry.getValue();
                    for (int i = 0; i < replicas.size(); i++) {
                        if (i > 0) answer.append(',');
                        answer.append(replicas.get(i));
                    }
                }
                System.out.println(answer);
            } catch (RuntimeException error) {
                System.out.println("error " + error.getClass().getSimpleName());
            }
        }
    }
}
