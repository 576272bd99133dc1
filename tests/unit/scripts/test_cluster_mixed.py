"""Mixed clusters in the launcher: `--impl kafka,ours,ours` parsed into one implementation per
broker, each broker's server.properties the same whichever implementation runs it (but for
our metrics key), cluster.json recording each broker's implementation and its history,
`start --impl` switching one broker, and `status`, `status --watch`, `events` and the lab
naming the implementation."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from scripts._cluster import (
    cli,
    commands,
    events,
    kafka_reference,
    processes,
    restart,
    runtime,
    zk_view,
)
from scripts._cluster.brokers import render_properties
from scripts._cluster.errors import ClusterError
from scripts._cluster.layout import (
    ClusterSpec,
    ClusterState,
    ProcessRecord,
    broker_dir,
    load_state,
    parse_impls,
    save_state,
)
from scripts._cluster.watch import plain_view
from scripts._cluster.watch_data import BrokerRow, ClusterSnapshot, ZookeeperRow, ZookeeperView

METRICS_KEY = "metrics.prometheus.listener"


def _spec(directory: Path, impl: str, broker_count: int = 3) -> ClusterSpec:
    return ClusterSpec(
        directory=str(directory),
        broker_count=broker_count,
        zookeeper_count=1,
        port_base=19092,
        zk_port_base=12181,
        overrides={"min.insync.replicas": "2"},
        impl=impl,
    )


def _properties(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    return {key: value for key, value in pairs}


def _state(directory: Path, impl: str) -> ClusterState:
    """A cluster.json as `up` writes it (pids unset), saved in `directory`."""
    spec = _spec(directory, impl)
    state = ClusterState(spec=spec)
    for i in spec.broker_ids:
        chosen = spec.initial_impl(i)
        command = ["java", "kafka.Kafka"] if chosen == "kafka" else ["python", "-m", "broker"]
        log_path = broker_dir(directory, i) / "broker.log"
        state.processes[f"broker-{i}"] = ProcessRecord(
            command, str(log_path), str(directory), impl=chosen
        )
    state.processes["zookeeper-1"] = ProcessRecord(["zk"], str(directory / "zk.log"), "/")
    directory.mkdir(parents=True, exist_ok=True)
    save_state(directory, state)
    return state


# -- --impl ---------------------------------------------------------------------------------


def test_one_implementation_is_every_brokers() -> None:
    assert parse_impls("ours", 3) == ["ours", "ours", "ours"]
    assert parse_impls("kafka", 2) == ["kafka", "kafka"]


def test_a_list_gives_broker_1_2_3_their_implementation_in_order() -> None:
    assert parse_impls("kafka,ours,ours", 3) == ["kafka", "ours", "ours"]
    assert parse_impls(" ours , kafka ", 2) == ["ours", "kafka"]


def test_a_list_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ClusterError, match="names 2 implementations for 3 brokers"):
        parse_impls("kafka,ours", 3)


def test_an_unknown_implementation_is_refused() -> None:
    with pytest.raises(ClusterError, match="unknown implementation 'jafka'"):
        parse_impls("kafka,jafka,ours", 3)


def test_up_reports_a_bad_list_as_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["up", "--impl", "kafka,ours", "--brokers", "3", "--dir", "/nonexistent"])
    assert exit_info.value.code == 2
    assert "names 2 implementations for 3 brokers" in capsys.readouterr().err


def test_start_impl_is_for_brokers_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["start", "--zookeeper", "1", "--impl", "ours", "--dir", "/nonexistent"])
    assert "--impl applies to --broker only" in capsys.readouterr().err


def test_only_our_brokers_need_a_metrics_port(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "kafka,ours,ours")
    ports = spec.all_ports()
    assert spec.metrics_port(1) not in ports
    assert {spec.metrics_port(2), spec.metrics_port(3)} <= set(ports)


# -- server.properties ----------------------------------------------------------------------


def test_server_properties_differ_only_in_our_metrics_key(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "kafka,ours,ours")
    for broker_id in spec.broker_ids:
        as_kafka = _properties(render_properties(spec, broker_id, "kafka"))
        as_ours = _properties(render_properties(spec, broker_id, "ours"))
        assert METRICS_KEY not in as_kafka
        assert as_ours.pop(METRICS_KEY) == f"127.0.0.1:{spec.metrics_port(broker_id)}"
        assert as_ours == as_kafka
    # Without an implementation named, each broker's is the one `up` gave it.
    assert METRICS_KEY not in _properties(render_properties(spec, 1))
    assert METRICS_KEY in _properties(render_properties(spec, 2))


# -- cluster.json ---------------------------------------------------------------------------


def test_cluster_json_records_each_brokers_implementation(tmp_path: Path) -> None:
    _state(tmp_path, "kafka,ours,ours")
    loaded = load_state(tmp_path)
    assert [loaded.broker_impl(i) for i in (1, 2, 3)] == ["kafka", "ours", "ours"]
    assert loaded.processes["zookeeper-1"].impl is None
    assert loaded.impls_ever_run() == {"kafka", "ours"}


def test_a_cluster_json_without_implementations_falls_back_to_up(tmp_path: Path) -> None:
    """Written before mixed clusters: the spec's --impl says what each broker runs."""
    state = _state(tmp_path, "kafka")
    for i in (1, 2, 3):
        state.processes[f"broker-{i}"].impl = None
    save_state(tmp_path, state)
    loaded = load_state(tmp_path)
    assert [loaded.broker_impl(i) for i in (1, 2, 3)] == ["kafka"] * 3


def _fake_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "spawn", lambda *args: os.getpid())


def test_launch_adds_to_the_history_only_when_the_implementation_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_spawn(monkeypatch)
    _state(tmp_path, "kafka,ours,ours")
    runtime.launch(tmp_path, "broker-1")
    runtime.launch(tmp_path, "broker-1")
    history = load_state(tmp_path).processes["broker-1"].impl_history
    assert [impl for _, impl in history] == ["kafka"]
    restart.switch_impl(tmp_path, 1, "ours", "java")
    runtime.launch(tmp_path, "broker-1")
    history = load_state(tmp_path).processes["broker-1"].impl_history
    assert [impl for _, impl in history] == ["kafka", "ours"]
    assert history[0][0] <= history[1][0]
    assert load_state(tmp_path).processes["zookeeper-1"].impl_history == []


# -- start --impl ---------------------------------------------------------------------------


def test_switching_rewrites_the_config_and_command_on_the_same_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kafka_2.13-3.9.2.jar").write_bytes(b"")
    monkeypatch.setattr(kafka_reference, "REFERENCE_LIB", lib)
    directory = tmp_path / "cluster"
    _state(directory, "kafka,ours,ours")
    properties_path = broker_dir(directory, 1) / "server.properties"

    restart.switch_impl(directory, 1, "ours", "java")
    record = load_state(directory).processes["broker-1"]
    assert record.impl == "ours"
    assert record.command[1:] == ["-m", "broker", str(properties_path)]
    as_ours = _properties(properties_path.read_text())
    assert as_ours[METRICS_KEY] == "127.0.0.1:19192"

    restart.switch_impl(directory, 1, "kafka", "java")
    record = load_state(directory).processes["broker-1"]
    assert record.impl == "kafka"
    assert record.command[0] == "java" and record.command[-2:] == [
        "kafka.Kafka",
        str(properties_path),
    ]
    as_kafka = _properties(properties_path.read_text())
    assert {k: v for k, v in as_ours.items() if k != METRICS_KEY} == as_kafka
    assert as_kafka["log.dirs"] == str(broker_dir(directory, 1) / "data")
    # The other brokers are untouched.
    assert load_state(directory).broker_impl(2) == "ours"


def test_start_impl_on_a_zookeeper_server_is_refused(tmp_path: Path) -> None:
    _state(tmp_path, "ours")
    with pytest.raises(ClusterError, match="applies to a broker"):
        restart.start(tmp_path, None, 1, "kafka")


# -- status, status --watch, events, the lab ------------------------------------------------


def test_status_ends_each_broker_line_with_its_implementation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(tmp_path, "kafka,ours,ours")
    monkeypatch.setattr(zk_view, "query", lambda connect: None)
    commands.status(tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "broker 1 pid=None alive=no registered=unknown impl=kafka"
    assert lines[1] == (
        "broker 2 pid=None alive=no registered=unknown"
        " metrics=http://127.0.0.1:19193/metrics impl=ours"
    )


def test_the_watch_view_names_each_brokers_implementation() -> None:
    brokers = [
        BrokerRow(1, 101, True, True, 40, None, "kafka"),
        BrokerRow(2, 102, True, True, 41, {}, "ours"),
    ]
    view = ZookeeperView({1: 40, 2: 41}, 1, 1, 0, [])
    snapshot = ClusterSnapshot(
        1.0, "2026-01-01 00:00:00", brokers, [ZookeeperRow(1, True, "standalone")], view
    )
    lines = plain_view(1, snapshot, None).splitlines()
    assert next(line for line in lines if line.startswith("broker 1 ")).endswith(" impl=kafka")
    assert next(line for line in lines if line.startswith("broker 2 ")).endswith(" impl=ours")


def _write_log(directory: Path, broker_id: int, lines: list[tuple[str, str]]) -> None:
    path = broker_dir(directory, broker_id) / events.STATE_CHANGE_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(f"[{stamp}] INFO {message} (state.change.logger)\n" for stamp, message in lines)
    path.write_text(text)


def test_events_label_each_line_with_the_implementation_that_wrote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = _state(tmp_path, "kafka,ours,ours")
    state.processes["broker-1"].impl = "ours"
    state.processes["broker-1"].impl_history = [
        ["2026-01-01 10:00:00,000", "kafka"],
        ["2026-01-01 10:05:00,000", "ours"],
    ]
    state.processes["broker-2"].impl_history = [["2026-01-01 10:00:00,500", "ours"]]
    save_state(tmp_path, state)
    _write_log(
        tmp_path,
        1,
        [("2026-01-01 10:00:01,000", "from Kafka"), ("2026-01-01 10:05:01,000", "from ours")],
    )
    _write_log(tmp_path, 2, [("2026-01-01 10:00:02,000", "follower")])
    events.events(tmp_path, None)
    assert capsys.readouterr().out.splitlines() == [
        "2026-01-01 10:00:01,000 broker-1 (kafka) from Kafka",
        "2026-01-01 10:00:02,000 broker-2 (ours) follower",
        "2026-01-01 10:05:01,000 broker-1 (ours) from ours",
    ]


def test_events_of_a_cluster_of_one_implementation_are_unlabelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _state(tmp_path, "kafka")
    _write_log(tmp_path, 1, [("2026-01-01 10:00:01,000", "elected")])
    events.events(tmp_path, None)
    assert capsys.readouterr().out == "2026-01-01 10:00:01,000 broker-1 elected\n"


def test_impl_at_picks_the_last_launch_before_the_line() -> None:
    impl_of = events.impl_at(
        [["2026-01-01 10:00:00,000", "kafka"], ["2026-01-01 11:00:00,000", "ours"]], "x"
    )
    assert impl_of("2026-01-01 09:00:00,000") == "kafka"  # before any launch on record
    assert impl_of("2026-01-01 10:30:00,000") == "kafka"
    assert impl_of("2026-01-01 11:00:00,000") == "ours"
    assert events.impl_at([], "ours")("2026-01-01 10:00:00,000") == "ours"


def test_the_labs_broker_rows_carry_the_implementation() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
    from _lab.snapshot import ProcessView, ZookeeperServerView, build_snapshot

    brokers = [ProcessView(1, 9092, 11, True, impl="kafka"), ProcessView(2, 9093, 12, True)]
    servers = [ZookeeperServerView(1, 2181, 10, True, "standalone")]
    view = build_snapshot(None, brokers, servers, {}, {2: 9193}, {}, 0.0)
    rows = {row["id"]: row for row in view["brokers"]}
    assert (rows[1]["impl"], rows[1]["metrics_url"]) == ("kafka", None)
    assert (rows[2]["impl"], rows[2]["metrics_url"]) == ("ours", "http://127.0.0.1:9193/metrics")
