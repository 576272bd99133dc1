"""The ZooKeeper layer against a real ZooKeeper server (started here from pyspark's jars)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from controller.partition_state_machine import MAX_STATES_PER_WRITE
from scripts._cluster.errors import ClusterError
from scripts._cluster.ports import reserve_port
from scripts._cluster.zookeeper import find_installation, server_jvm_options
from zk.client import MAX_READS_PER_REQUEST, CheckOp, CreateOp, DeleteOp, ZkClient
from zk.cluster_watch import ClusterChange, ClusterWatch
from zk.errors import (
    BadVersionError,
    BrokerIdInUseError,
    ControllerMovedError,
    InvalidPathError,
    TopicExistsError,
)
from zk.kafka_zk import KafkaZk
from zk.znodes import (
    BrokerIdZNode,
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicZNode,
    new_kafka_uuid,
)

ZK_START_TIMEOUT_S = 30.0
CONDITION_TIMEOUT_S = 10.0


def _four_letter_word(port: int, word: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
        sock.sendall(word)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks)


def _zookeeper_classpath() -> str:
    """The launcher's: the jars a server needs of pyspark's (a JVM that scans all ~280 of them
    spends twice the CPU starting up)."""
    try:
        return find_installation().classpath
    except ClusterError as error:
        pytest.fail(f"this test starts a ZooKeeper server: {error}")


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone ZooKeeper server; yields its connect string."""
    if shutil.which("java") is None:
        pytest.fail("java is not on PATH: this test starts a real ZooKeeper server (make setup)")
    classpath = _zookeeper_classpath()
    base = tmp_path_factory.mktemp("zookeeper")
    reservation = reserve_port()
    port = reservation.base
    config = base / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                "tickTime=500",
                f"dataDir={base / 'data'}",
                f"clientPort={port}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "4lw.commands.whitelist=*",
                "minSessionTimeout=1000",
                "maxSessionTimeout=30000",
                "",
            ]
        )
    )
    log_file = (base / "zookeeper.log").open("wb")
    process = subprocess.Popen(
        [
            "java",
            # The launcher's JIT and GC settings, and `make test`'s archive (SERVER_JVMFLAGS).
            *server_jvm_options(),
            "-cp",
            classpath,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(config),
        ],
        stdout=log_file,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + ZK_START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"ZooKeeper exited early; see {base / 'zookeeper.log'}")
            try:
                if _four_letter_word(port, b"ruok") == b"imok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"ZooKeeper not serving within {ZK_START_TIMEOUT_S}s")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()
        reservation.release()


_chroot_counter = iter(range(1_000_000))


@pytest.fixture
def chroot_connect(zookeeper: str) -> str:
    """A fresh chroot per test so tests never see each other's znodes."""
    return f"{zookeeper}/test{next(_chroot_counter)}_{int(time.time() * 1000)}"


@contextlib.asynccontextmanager
async def started(connect: str) -> AsyncIterator[KafkaZk]:
    """A started client (own session) with Kafka's persistent paths in place."""
    zk_client = ZkClient(connect, session_timeout_ms=6000)
    await zk_client.start()
    try:
        kafka_zk = KafkaZk(zk_client)
        await kafka_zk.ensure_persistent_paths()
        yield kafka_zk
    finally:
        await zk_client.close()


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + CONDITION_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def _registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration.create(
        broker_id=broker_id,
        endpoints=[f"PLAINTEXT://127.0.0.1:{port}"],
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"},
        timestamp_ms=1700000000000,
    )


# ------------------------------------------------------------------ client


def test_chroot_is_created_and_isolates_paths(zookeeper: str) -> None:
    async def scenario() -> None:
        chrooted = ZkClient(f"{zookeeper}/kafka_chroot_test/inner", session_timeout_ms=6000)
        plain = ZkClient(zookeeper, session_timeout_ms=6000)
        await chrooted.start()
        await plain.start()
        try:
            assert await plain.exists("/kafka_chroot_test/inner") is not None
            await chrooted.create("/brokers/ids", b"x", makepath=True)
            found = await plain.get("/kafka_chroot_test/inner/brokers/ids")
            assert found is not None and found[0] == b"x"
            assert await plain.exists("/brokers/ids") is None
            assert await chrooted.get_children("/") == ["brokers"]
        finally:
            await plain.delete("/kafka_chroot_test", recursive=True)
            await chrooted.close()
            await plain.close()

    asyncio.run(scenario())


def test_get_many_reads_in_multi_reads_with_missing_and_empty_znodes(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            count = 2 * MAX_READS_PER_REQUEST + 3
            await client.create("/many", b"")
            for index in range(count):
                if index % 7 != 3:  # every 7th one is missing
                    await client.create(f"/many/z{index}", f"v{index}".encode() * (index % 3))
            paths = [f"/many/z{index}" for index in range(count)]
            found = await client.get_many(paths)
            assert client._multi_read  # the server answered multiReads (ZooKeeper 3.6+)
            for index, item in enumerate(found):
                if index % 7 == 3:
                    assert item is None
                else:
                    assert item is not None
                    assert item[0] == f"v{index}".encode() * (index % 3)
                    assert item[1].version == 0 and item[1].data_length == len(item[0])
            assert await client.get_many([]) == []

    asyncio.run(scenario())


def test_paths_zookeeper_refuses_read_as_absent_and_refuse_writes(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            await client.create("/names", b"")
            await client.create("/names/ok", b"v")
            for bad in ("/names/..", "/names/.", "/names/", "/names/a\x00b", "/names//x"):
                assert await client.get(bad) is None, bad
                assert await client.exists(bad) is None, bad
                assert await client.get_children(bad) is None, bad
                found = await client.get_many(["/names/ok", bad])
                assert found[0] is not None and found[0][0] == b"v" and found[1] is None, bad
                with pytest.raises(InvalidPathError):
                    await client.create(bad, b"x")
                with pytest.raises(InvalidPathError):
                    await client.set(bad, b"x")
                with pytest.raises(InvalidPathError) as refused:
                    await client.multi([CheckOp("/names/ok", 0), DeleteOp(bad, -1)])
                assert refused.value.op_index == 1
            assert await client.get_children("/names") == ["ok"]  # nothing was written

    asyncio.run(scenario())


def test_watch_callbacks_run_on_the_loop_and_rearm(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            loop = asyncio.get_running_loop()
            on_loop: list[bool] = []
            fired: list[str] = []

            def on_data() -> None:
                on_loop.append(asyncio.get_running_loop() is loop)
                fired.append("data")

            client.watch_data("/w", on_data)
            await client.create("/w", b"1")
            await wait_for(lambda: len(fired) >= 1, "creation event")
            await client.set("/w", b"2")
            await wait_for(lambda: len(fired) >= 2, "change event (watch re-armed)")
            await client.delete("/w")
            await wait_for(lambda: len(fired) >= 3, "deletion event")
            assert on_loop and all(on_loop)

    asyncio.run(scenario())


def test_watches_armed_by_reads_fire_once_per_read(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            await client.create("/r/a", b"1", makepath=True)
            await client.create("/r/b", b"1")
            fired: list[str] = []
            for name in ("a", "b", "c"):  # /r/c does not exist yet
                client.watch_data(f"/r/{name}", functools.partial(fired.append, name), True)
            paths = ["/r/a", "/r/b", "/r/c"]
            found = await client.get_many(paths, arm=True)
            assert [item is None for item in found] == [False, False, True]
            await client.set("/r/a", b"2")
            await client.create("/r/c", b"1")
            await client.delete("/r/b")
            await wait_for(
                lambda: sorted(fired) == ["a", "b", "c"], "a change, a creation, a deletion"
            )
            # Fired watches stay disarmed until the caller reads again...
            await client.set("/r/a", b"3")
            await client.set("/r/c", b"2")
            await client.get("/r/a")  # a round trip: an event would have come before its answer
            assert sorted(fired) == ["a", "b", "c"]
            # ...which arms them as of that read.
            await client.get_many(paths, arm=True)
            await client.set("/r/a", b"4")
            await client.create("/r/b", b"again")
            await wait_for(
                lambda: sorted(fired) == ["a", "a", "b", "b", "c"], "events after a read"
            )
            assert fired.count("c") == 1

    asyncio.run(scenario())


def test_watch_armed_as_of_an_older_read_fires_for_a_change_after_it(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            await client.create("/s", b"1")
            fired: list[str] = []
            client.watch_data("/s", functools.partial(fired.append, "s"), armed_by_reads=True)
            found = await client.get("/s")
            assert found is not None
            read_zxid = found[1].mzxid
            await client.set("/s", b"2")  # after the read, before the watch is armed
            client._arm_as_of(read_zxid, ["/s"], [found])
            await wait_for(lambda: fired == ["s"], "the change the read did not see")

    asyncio.run(scenario())


def test_children_watch_on_missing_parent_fires_when_it_appears(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            fired: list[str] = []
            client.watch_children("/later", lambda: fired.append("children"))
            await client.create("/later/child", makepath=True)
            await wait_for(lambda: len(fired) >= 1, "parent creation seen")
            await client.create("/later/second")
            await wait_for(
                lambda: len(fired) >= 2, "child added under a parent created after watching"
            )

    asyncio.run(scenario())


def test_watch_removed_and_added_again_fires_once_per_change(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            client = kafka_zk.client
            await client.create("/churn", b"0")
            await client.create("/marker", b"0")
            fired: list[str] = []

            def on_churn() -> None:
                fired.append("churn")

            # The server-side watch armed first is still pending after the unwatch; adding
            # the path again must not leave two watchers that each deliver the change.
            client.watch_data("/churn", on_churn)
            client.unwatch_data("/churn", on_churn)
            client.watch_data("/churn", on_churn)
            client.watch_data("/marker", lambda: fired.append("marker"))
            await client.set("/churn", b"1")
            await client.set("/marker", b"1")
            # ZooKeeper delivers one session's events in order: once the marker's change
            # arrived, every delivery of the earlier change has too.
            await wait_for(lambda: "marker" in fired, "marker change")
            assert fired == ["churn", "marker"]

    asyncio.run(scenario())


# ------------------------------------------------------------------ brokers


def test_broker_registration_json_and_duplicate_id(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk, started(chroot_connect) as other:
            broker_epoch = await kafka_zk.register_broker(_registration(1))
            found = await kafka_zk.client.get(BrokerIdZNode.path(1))
            assert found is not None
            data, stat = found
            assert stat.czxid == broker_epoch
            assert stat.ephemeral_owner == kafka_zk.client.session_id
            assert data == (
                b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
                b'"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"port":9092,'
                b'"host":"127.0.0.1","version":5,"timestamp":"1700000000000"}'
            )
            assert await kafka_zk.get_brokers_with_epochs() == {1: (_registration(1), broker_epoch)}
            with pytest.raises(BrokerIdInUseError):
                await other.register_broker(_registration(1, port=9093))

    asyncio.run(scenario())


def test_cluster_id_is_created_once(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            first = await kafka_zk.get_or_create_cluster_id()
            assert len(first) == 22
            assert await kafka_zk.get_or_create_cluster_id() == first

    asyncio.run(scenario())


# ------------------------------------------------------------------ controller


def test_election_one_wins_epoch_increments_loser_gets_none(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as first, started(chroot_connect) as second:
            assert await first.get_controller_epoch() is None
            candidates = {1: first, 2: second}
            results = await asyncio.gather(
                first.try_elect_controller(1), second.try_elect_controller(2)
            )
            winners = {bid: r for bid, r in zip((1, 2), results, strict=True) if r is not None}
            assert len(winners) == 1, results
            ((winner_id, (epoch, epoch_zk_version)),) = winners.items()
            assert epoch == 1  # Kafka's first controller epoch
            loser_id = 3 - winner_id
            assert await first.get_controller_id() == winner_id
            assert await first.get_controller_epoch() == (1, epoch_zk_version)
            # While the winner holds /controller, the other broker cannot win.
            assert await candidates[loser_id].try_elect_controller(loser_id) is None

            await candidates[winner_id].resign_controller(winner_id)
            again = await candidates[loser_id].try_elect_controller(loser_id)
            assert again is not None and again[0] == 2
            assert await first.get_controller_id() == loser_id

    asyncio.run(scenario())


def test_zombie_controller_write_is_fenced(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as zombie, started(chroot_connect) as successor:
            await zombie.create_topic("t", {0: [1, 2]}, {}, new_kafka_uuid())
            won = await zombie.try_elect_controller(1)
            assert won is not None
            epoch, zombie_zk_version = won
            state = PartitionState(leader=1, leader_epoch=0, isr=[1, 2], controller_epoch=epoch)
            await zombie.create_partition_states(zombie_zk_version, "t", {0: state})

            # Broker 1 stalls; its /controller goes away and broker 2 is elected.
            await zombie.resign_controller(1)
            new = await successor.try_elect_controller(2)
            assert new is not None and new[0] == epoch + 1
            with pytest.raises(ControllerMovedError):
                await zombie.update_partition_state(
                    zombie_zk_version, "t", 0, PartitionState(1, 1, [1], epoch), 0
                )
            with pytest.raises(ControllerMovedError):
                await zombie.delete_topic_znodes(zombie_zk_version, "t")
            assert await zombie.get_partition_states("t", [0]) == {0: (state, 0)}
            # The successor's fenced write succeeds at the same partition zkVersion.
            version = await successor.update_partition_state(
                new[1], "t", 0, PartitionState(2, 1, [2], new[0]), 0
            )
            assert version == 1

    asyncio.run(scenario())


def test_partition_states_written_in_one_multi_all_or_none(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            count = MAX_STATES_PER_WRITE
            await kafka_zk.create_topic(
                "t", {p: [1, 2] for p in range(count)}, {}, new_kafka_uuid()
            )
            won = await kafka_zk.try_elect_controller(1)
            assert won is not None
            epoch, epoch_zk_version = won
            first = PartitionState(leader=1, leader_epoch=0, isr=[1, 2], controller_epoch=epoch)
            await kafka_zk.create_partition_states(
                epoch_zk_version, "t", dict.fromkeys(range(count), first)
            )
            moved = PartitionState(leader=2, leader_epoch=1, isr=[2], controller_epoch=epoch)
            versions = await kafka_zk.update_partition_states(
                epoch_zk_version, [(("t", p), moved, 0) for p in range(count)]
            )
            assert versions == [1] * count
            states = await kafka_zk.get_partition_states("t", list(range(count)))
            assert all(states[p] == (moved, 1) for p in range(count))

            # One stale expected version (partition 5): nothing of the multi is written.
            again = PartitionState(leader=1, leader_epoch=2, isr=[1], controller_epoch=epoch)
            writes = [(("t", p), again, 0 if p == 5 else 1) for p in range(count)]
            with pytest.raises(BadVersionError) as refused:
                await kafka_zk.update_partition_states(epoch_zk_version, writes)
            assert refused.value.op_index == 5
            states = await kafka_zk.get_partition_states("t", list(range(count)))
            assert all(states[p] == (moved, 1) for p in range(count))

    asyncio.run(scenario())


# ------------------------------------------------------------------ topics


def test_create_topic_and_partition_states_round_trip(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            topic_id = new_kafka_uuid()
            assignment = {0: [1, 2], 1: [2, 1], 2: [1, 2]}
            await kafka_zk.create_topic("orders", assignment, {"retention.ms": "1000"}, topic_id)
            with pytest.raises(TopicExistsError):
                await kafka_zk.create_topic("orders", assignment, {}, new_kafka_uuid())
            assert await kafka_zk.get_all_topics() == ["orders"]
            assert await kafka_zk.get_topic_assignment("orders") == TopicAssignment(
                topic_id, assignment
            )
            assert await kafka_zk.get_topic_configs("orders") == {"retention.ms": "1000"}

            won = await kafka_zk.try_elect_controller(1)
            assert won is not None
            epoch, epoch_zk_version = won
            states = {
                p: PartitionState(replicas[0], 0, list(replicas), epoch)
                for p, replicas in assignment.items()
            }
            created = await kafka_zk.create_partition_states(epoch_zk_version, "orders", states)
            assert created == {0: 0, 1: 0, 2: 0}
            again = await kafka_zk.create_partition_states(
                epoch_zk_version, "orders", {0: states[0]}
            )
            assert again == {0: None}
            read = await kafka_zk.get_partition_states("orders", [0, 1, 2, 3])
            assert read == {0: (states[0], 0), 1: (states[1], 0), 2: (states[2], 0), 3: None}
            raw = await kafka_zk.client.get(TopicPartitionStateZNode.path("orders", 1))
            assert raw is not None
            assert raw[0] == (
                b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'
            )

            await kafka_zk.mark_topic_for_deletion("orders")
            assert await kafka_zk.get_topics_pending_deletion() == ["orders"]
            await kafka_zk.delete_topic_znodes(epoch_zk_version, "orders")
            assert await kafka_zk.get_all_topics() == []
            assert await kafka_zk.get_topics_pending_deletion() == []
            assert await kafka_zk.get_topic_configs("orders") == {}

    asyncio.run(scenario())


def test_topic_with_thousands_of_partitions_is_deleted_in_fenced_batches(
    chroot_connect: str,
) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as kafka_zk:
            # A long (legal: at most 249 characters) name makes each znode path long, so the
            # topic's ~4,000 znodes would not fit one 1 MB multi request.
            topic = "t" * 240
            partitions = 2_000
            assignment = {p: [1] for p in range(partitions)}
            await kafka_zk.create_topic(topic, assignment, {"retention.ms": "1"}, new_kafka_uuid())
            won = await kafka_zk.try_elect_controller(1)
            assert won is not None
            epoch, epoch_zk_version = won
            state = PartitionState(1, 0, [1], epoch)
            created = await kafka_zk.create_partition_states(
                epoch_zk_version, topic, dict.fromkeys(assignment, state)
            )
            assert set(created.values()) == {0}
            await kafka_zk.mark_topic_for_deletion(topic)
            path_bytes = sum(
                len(TopicPartitionStateZNode.path(topic, p)) * 2 for p in range(partitions)
            )
            assert path_bytes > 1024 * 1024  # what one multi would have had to carry

            await kafka_zk.delete_topic_znodes(epoch_zk_version, topic)
            assert await kafka_zk.get_all_topics() == []
            assert await kafka_zk.client.exists(f"/brokers/topics/{topic}") is None
            assert await kafka_zk.get_topic_configs(topic) == {}
            assert await kafka_zk.get_topics_pending_deletion() == []

    asyncio.run(scenario())


def test_topic_deletion_markers_are_removed_fenced(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as zombie, started(chroot_connect) as successor:
            await zombie.create_topic("kept", {0: [1]}, {}, new_kafka_uuid())
            await zombie.mark_topic_for_deletion("kept")
            old = await zombie.try_elect_controller(1)
            assert old is not None
            await zombie.resign_controller(1)
            new = await successor.try_elect_controller(2)
            assert new is not None
            with pytest.raises(ControllerMovedError):
                await zombie.delete_topic_deletion_markers(old[1], ["kept"])
            assert await zombie.get_topics_pending_deletion() == ["kept"]
            # A missing marker is skipped; the topic itself stays.
            await successor.delete_topic_deletion_markers(new[1], ["kept", "never-marked"])
            assert await successor.get_topics_pending_deletion() == []
            assert await successor.get_all_topics() == ["kept"]

    asyncio.run(scenario())


# ------------------------------------------------------------------ cluster watch


def test_cluster_watch_follows_brokers_topics_and_partition_states(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as observer:
            changes: list[ClusterChange] = []
            watch = ClusterWatch(observer, changes.append)
            await watch.start()
            assert watch.view.brokers == {} and watch.view.topics == {}

            async with started(chroot_connect) as broker:
                await broker.register_broker(_registration(7))
                # The view is updated before the change is reported: wait for the report.
                await wait_for(
                    lambda: any(change.brokers_changed for change in changes), "broker 7 joins"
                )
                assert 7 in watch.view.brokers

                won = await broker.try_elect_controller(7)
                assert won is not None
                await wait_for(lambda: watch.view.controller_id == 7, "controller 7 seen")

                await broker.create_topic("events", {0: [7], 1: [7]}, {}, new_kafka_uuid())
                await wait_for(
                    lambda: any("events" in change.topics_added for change in changes),
                    "topic added",
                )
                assert "events" in watch.view.topics

                state = PartitionState(7, 0, [7], won[0])
                await broker.create_partition_states(won[1], "events", {0: state, 1: state})
                await wait_for(
                    lambda: watch.view.partition_states.get(("events", 1)) == (state, 0),
                    "partition state created",
                )
                moved = PartitionState(-1, 1, [7], won[0])
                await broker.update_partition_state(won[1], "events", 0, moved, 0)
                await wait_for(
                    lambda: any(
                        ("events", 0) in change.partitions_changed
                        and watch.view.partition_states.get(("events", 0)) == (moved, 1)
                        for change in changes
                    ),
                    "partition state update reported",
                )

                await broker.delete_topic_znodes(won[1], "events")
                await wait_for(
                    lambda: any("events" in change.topics_deleted for change in changes),
                    "topic deleted",
                )
                assert "events" not in watch.view.topics
                assert not any(key[0] == "events" for key in watch.view.partition_states)
            # The broker's session is closed: its registration and /controller are gone.
            await wait_for(lambda: 7 not in watch.view.brokers, "broker 7 leaves")
            await wait_for(lambda: watch.view.controller_id is None, "controller gone")
            await watch.stop()

    asyncio.run(scenario())


def test_session_expiry_is_reported_and_watches_survive_it(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as observer, started(chroot_connect) as broker:
            events: list[str] = []
            broker.client.on_session_event(events.append)
            changes: list[ClusterChange] = []
            watch = ClusterWatch(broker, changes.append)
            await watch.start()
            await broker.register_broker(_registration(5))
            await wait_for(lambda: 5 in watch.view.brokers, "own registration seen")
            old_session = broker.client.session_id

            await broker.client.expire_session_for_testing()
            await wait_for(lambda: "LOST" in events, "LOST reported")
            await wait_for(lambda: events[-1] == "CONNECTED", "reconnected with a new session")
            assert broker.client.session_id != old_session
            await wait_for(lambda: 5 not in watch.view.brokers, "ephemeral registration gone")

            # Re-register as a broker does on LOST; the re-armed watches see it.
            await broker.register_broker(_registration(5))
            await wait_for(lambda: 5 in watch.view.brokers, "re-registration seen")
            # Changes made by others after the new session are still followed.
            await observer.create_topic("after", {0: [5]}, {}, new_kafka_uuid())
            await wait_for(lambda: "after" in watch.view.topics, "topic after expiry seen")
            await watch.stop()

    asyncio.run(scenario())


def test_cluster_watch_skips_malformed_znodes_and_follows_the_rest(chroot_connect: str) -> None:
    async def scenario() -> None:
        async with started(chroot_connect) as observer, started(chroot_connect) as broker:
            changes: list[ClusterChange] = []
            watch = ClusterWatch(observer, changes.append)
            await watch.start()
            client = broker.client
            # Written by a broken tool: each one used to end the watch's refresh task.
            bad_registration = (
                b'{"version":5,"host":"h","port":1,"jmx_port":"x","endpoints":["PLAINTEXT://h:1"],'
                b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"features":{}}'
            )
            await client.create(BrokerIdZNode.path(8), bad_registration, ephemeral=True)
            await client.create("/brokers/topics/garbled", b"not json")
            await broker.register_broker(_registration(9))
            # A well-formed topic whose partition state is not: created at once, so the
            # refresh that adds the topic also reads the state.
            assignment = TopicAssignment(new_kafka_uuid(), {0: [9]})
            state_path = TopicPartitionStateZNode.path("good", 0)
            await client.multi(
                [
                    CreateOp(TopicZNode.path("good"), TopicZNode.encode(assignment)),
                    CreateOp(TopicPartitionsZNode.path("good")),
                    CreateOp(TopicPartitionZNode.path("good", 0)),
                    CreateOp(state_path, b"{}"),
                ]
            )
            await wait_for(
                lambda: any("good" in change.topics_added for change in changes),
                "the well-formed topic reported",
            )
            # Everything written before the topic has been read by now (events arrive in order).
            assert 9 in watch.view.brokers
            assert 8 not in watch.view.brokers
            assert "garbled" not in watch.view.topics
            assert ("good", 0) not in watch.view.partition_states

            # Corrected znodes are picked up through the watches kept on them.
            won = await broker.try_elect_controller(9)
            assert won is not None
            state = PartitionState(9, 0, [9], won[0])
            await client.set(state_path, TopicPartitionStateZNode.encode(state))
            await wait_for(
                lambda: watch.view.partition_states.get(("good", 0)) == (state, 1),
                "the corrected partition state",
            )
            await client.set(BrokerIdZNode.path(8), BrokerIdZNode.encode(_registration(8)))
            await wait_for(lambda: 8 in watch.view.brokers, "the corrected registration")
            await client.set("/brokers/topics/garbled", TopicZNode.encode(assignment))
            await wait_for(lambda: "garbled" in watch.view.topics, "the corrected topic")
            await watch.stop()

    asyncio.run(scenario())
