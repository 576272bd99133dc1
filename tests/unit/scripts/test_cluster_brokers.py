"""The launcher's server.properties: --set values naming {broker_dir} become each broker's
own path, and every log dir exists before the broker starts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from scripts._cluster.brokers import prepare_broker, render_properties
from scripts._cluster.layout import ClusterSpec, broker_dir


def spec_with(tmp_path: Path, overrides: dict[str, str]) -> ClusterSpec:
    return ClusterSpec(
        directory=str(tmp_path),
        broker_count=2,
        zookeeper_count=1,
        port_base=19092,
        zk_port_base=12181,
        overrides=overrides,
    )


def properties_of(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_broker_dir_placeholder_expands_per_broker(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, {"log.dirs": "{broker_dir}/disk-a,{broker_dir}/disk-b"})
    for broker_id in (1, 2):
        own = broker_dir(tmp_path, broker_id)
        written = properties_of(render_properties(spec, broker_id))
        assert written["log.dirs"] == f"{own}/disk-a,{own}/disk-b"


def test_values_without_placeholder_are_written_as_given(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, {"min.insync.replicas": "2"})
    written = properties_of(render_properties(spec, 1))
    assert written["min.insync.replicas"] == "2"
    assert written["log.dirs"] == str(broker_dir(tmp_path, 1) / "data")


def test_prepare_broker_creates_every_log_dir(tmp_path: Path) -> None:
    spec = spec_with(tmp_path, {"log.dirs": "{broker_dir}/disk-a, {broker_dir}/disk-b"})
    prepare_broker(spec, 2, "java")
    own = broker_dir(tmp_path, 2)
    assert (own / "disk-a").is_dir() and (own / "disk-b").is_dir()
    assert (own / "server.properties").is_file()


def test_racks_give_broker_i_rack_i_minus_one_mod_n(tmp_path: Path) -> None:
    spec = replace(spec_with(tmp_path, {}), broker_count=6, racks=3)
    racks = [properties_of(render_properties(spec, b))["broker.rack"] for b in spec.broker_ids]
    assert racks == ["rack-0", "rack-1", "rack-2", "rack-0", "rack-1", "rack-2"]
    assert "broker.rack" not in properties_of(render_properties(spec_with(tmp_path, {}), 1))


def test_broker_id_and_rack_placeholders_expand_per_broker(tmp_path: Path) -> None:
    spec = replace(
        spec_with(tmp_path, {"broker.rack": "az-{rack}-{broker_id}", "x.y": "b{broker_id}"}),
        racks=2,
    )
    written = properties_of(render_properties(spec, 2))
    assert written["broker.rack"] == "az-rack-1-2"  # --set wins over --racks
    assert written["x.y"] == "b2"
