"""Fire mutated Kafka requests at a live cluster, then check that every broker survived and that
the log holds exactly what was acknowledged.

    scripts/fuzz --bootstrap HOST:PORT,... [--dir CLUSTER_DIR] [--frames N] [--seed S]
                 [--corpus FILE | --record-corpus FILE] [--concurrency C] [--max-seconds S]
                 [--frame-timeout-ms MS] [--report-json FILE] [--command-config FILE]

1. Corpus: the request frames real clients (kafka-python, confluent-kafka, kcat) send for every
   API the brokers advertise, recorded through a proxy (or loaded with --corpus; --record-corpus
   saves a recording). Every recorded frame must pass the broker's bounds check.
2. Firing: seeded mutations (bit flips, truncation, inserted and overwritten bytes, wild lengths
   and counts at every length prefix, other versions, splices, record batches changed under a
   fixed CRC, random frames), each followed by an ApiVersions probe; outcomes are answered,
   closed or stalled (see fuzz_fire.py). The 18-byte Metadata v9 request that once aborted a
   broker always goes first. --max-seconds bounds the firing phase; a progress line every 10 s.
3. Checks: an idempotent acks=all producer writes numbered records to `fuzz-acked` throughout;
   afterwards the topic must hold exactly the acknowledged records at their offsets (read from
   where it ended before the run, so runs can repeat on one cluster). Every broker must be alive
   (--dir: same pid as before), registered and answering. With --dir, ERROR lines the broker
   logs gained are shown.

With --command-config (Kafka client properties: the `client.properties` of `scripts/cluster up
--security ...`) every connection uses the cluster's TLS and SASL. On a SASL listener the
firing has two phases, each with half the frames and half the time: frames before
authentication (TLS only, the mutated frame first: the broker may take only ApiVersions and the
SASL requests) and frames after the fuzzer's own login. Recording needs a plaintext listener
(the recording proxy reads the clients' frames), so a secured run takes a --corpus.

Prints a summary (frames/s, outcomes, per-API counts, crashes, acked/lost/extra) and exits 1 on
a broker death, an unhealthy broker, a lost or extra record, a response that is not a Kafka
frame, an ERROR line in a broker log (--dir), a legitimate frame the bounds check refuses, or
an advertised API missing from the corpus (named).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.index import api_key_map

from broker.handlers import build_registry
from broker.protocol.bounds import BoundsError
from broker.protocol.header import MalformedRequestError

from .fuzz_check import (
    AckedWriter,
    BrokerHealth,
    broker_health,
    create_acked_topic,
    end_offsets,
    first_answer,
    log_positions,
    new_error_lines,
    process_status,
    read_back,
)
from .fuzz_fire import (
    CONNECT_TIMED_OUT,
    CONNECT_TIMEOUT_S,
    REFUSED,
    FireOptions,
    Tally,
    fire,
    fire_one,
)
from .fuzz_mutate import CorpusFrame, Mutator, analyse, frame, load_corpus, save_corpus
from .fuzz_record import record
from .fuzz_security import ClientSecurity, SecurityConfigError

# The witness topic. Its name length differs from every recorded topic name (checked), so no
# bit flip of a recorded DeleteTopics/CreateTopics/AlterConfigs frame can name it.
ACKED_TOPIC = "fuzz-acked"
# The 18-byte Metadata v9 request (after its size prefix) that once aborted a broker: its
# topics array's count is the 5-byte varint ff ff ff ff 2d, far beyond any frame.
KILLER_PAYLOAD = bytes.fromhex("0003 0009 00000007 0002 6378 00 ffffffff2d")
ERROR_LINES_SHOWN = 20
METADATA = 3


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", required=True, help="HOST:PORT,... of the cluster")
    parser.add_argument("--dir", help="the cluster's directory (scripts/cluster --dir)")
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, help="default: random (printed)")
    corpus = parser.add_mutually_exclusive_group()
    corpus.add_argument("--corpus", type=Path, help="load this corpus instead of recording")
    corpus.add_argument("--record-corpus", type=Path, help="save the recorded corpus here")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="bounds the firing")
    parser.add_argument("--frame-timeout-ms", type=int, default=2000)
    parser.add_argument("--report-json", type=Path)
    parser.add_argument("--command-config", help="Kafka client properties (TLS, SASL)")
    args = parser.parse_args(argv)
    if args.frames < 0 or args.concurrency < 1 or args.frame_timeout_ms < 1:
        parser.error("--frames must be >= 0, --concurrency and --frame-timeout-ms >= 1")
    try:
        args.security = ClientSecurity.load(args.command_config)
    except (SecurityConfigError, OSError) as error:
        parser.error(str(error))
    if args.security.protocol != "PLAINTEXT" and args.corpus is None:
        parser.error("recording needs a plaintext listener: pass --corpus with --command-config")
    return args


@functools.cache
def _api_names() -> dict[int, str]:
    names = dict(api_key_map)
    names.update({spec.api_key: spec.name for spec in build_registry().all()})
    return names


def _say(message: str) -> None:
    print(f"fuzz: {message}", file=sys.stderr, flush=True)


def _obtain_corpus(
    args: argparse.Namespace, brokers: dict[int, str]
) -> tuple[list[bytes], list[str]]:
    """The corpus payloads and what went wrong while recording them."""
    if args.corpus is not None:
        return load_corpus(args.corpus), []
    _say("recording real clients through the proxy")
    recording = record(brokers, secrets.token_hex(2))
    clashes = [t for t in recording.topics if len(t) == len(ACKED_TOPIC)]
    if clashes:
        raise SystemExit(
            f"fuzz: recorded topic names {clashes} could be flipped into {ACKED_TOPIC}"
        )
    if args.record_corpus is not None:
        save_corpus(args.record_corpus, recording.frames)
    return recording.frames, recording.failures


def _analyse_corpus(payloads: list[bytes]) -> tuple[list[CorpusFrame], list[str]]:
    """Analysed frames, and the legitimate frames the bounds check refused (a broker bug)."""
    frames, refused = [], []
    for payload in payloads:
        try:
            frames.append(analyse(payload))
        except (BoundsError, MalformedRequestError) as error:
            refused.append(f"{error}: {payload.hex()}")
    return frames, refused


def _missing_apis(versions: dict[int, tuple[int, int]], frames: list[CorpusFrame]) -> list[int]:
    covered = {f.api_key for f in frames}
    return sorted(set(versions) - covered)


async def _fire_all(
    frames: list[CorpusFrame],
    versions: dict[int, tuple[int, int]],
    args: argparse.Namespace,
    addresses: list[str],
    seed: int,
) -> tuple[dict[str, Tally], str]:
    """Each phase's tally (see _phases), and what became of the historic first frame."""
    names = _api_names()
    timeout_s = args.frame_timeout_ms / 1000
    security: ClientSecurity = args.security
    phases = _phases(security)
    tallies = {name: Tally() for name, _ in phases}
    logged_in = functools.partial(security.open, authenticate=True, timeout_s=CONNECT_TIMEOUT_S)
    first = await fire_one(addresses[0], frame(KILLER_PAYLOAD), timeout_s, logged_in)
    last = tallies[phases[-1][0]]
    if first in (REFUSED, CONNECT_TIMED_OUT):
        last.count_connect_failure(first)
    else:
        last.add(names[METADATA], "historic 18-byte frame", first)
    budget = max(args.frames - 1, 0)
    for index, (name, authenticate) in enumerate(phases):
        share = budget // len(phases) + (budget % len(phases) if index == len(phases) - 1 else 0)
        if len(phases) > 1:
            _say(f"{name}: up to {share} frames")
        options = FireOptions(
            addresses=addresses,
            concurrency=args.concurrency,
            frame_timeout_s=timeout_s,
            deadline=time.monotonic() + args.max_seconds / len(phases),
            api_name=lambda key: "random" if key is None else names.get(key, f"api {key}"),
            progress=_say,
            open=functools.partial(
                security.open, authenticate=authenticate, timeout_s=CONNECT_TIMEOUT_S
            ),
        )
        mutator = Mutator(frames, versions, seed + index)
        await fire(mutator.next, share, options, tallies[name])
    return tallies, first


BEFORE_AUTHENTICATION = "before authentication"
AFTER_AUTHENTICATION = "after authentication"


def _phases(security: ClientSecurity) -> list[tuple[str, bool]]:
    """(name, log in first) per firing phase: on a SASL listener, frames before and after
    authentication; otherwise one phase named after the protocol."""
    if security.authenticates:
        return [(BEFORE_AUTHENTICATION, False), (AFTER_AUTHENTICATION, True)]
    return [(security.protocol.lower(), False)]


def _compare(
    acked: dict[tuple[int, int], bytes], stored: dict[tuple[int, int], bytes]
) -> tuple[list[str], list[str]]:
    """Acknowledged records missing or changed, and stored records never acknowledged."""
    lost = [f"{p}@{o}={v!r}" for (p, o), v in sorted(acked.items()) if stored.get((p, o)) != v]
    extra = [f"{p}@{o}={v!r}" for (p, o), v in sorted(stored.items()) if (p, o) not in acked]
    return lost, extra


def _health_report(health: list[BrokerHealth]) -> dict[str, Any]:
    return {
        "brokers": {
            str(h.node_id): {
                "address": h.address,
                "alive": h.alive,
                "answering": h.answering,
                "registered": h.registered,
                "unlisted_brokers": list(h.unlisted),
            }
            for h in health
        },
        "crashes": [h.node_id for h in health if h.dead],
        "unhealthy": [h.node_id for h in health if not (h.answering and h.registered)],
    }


def _print_summary(report: dict[str, Any]) -> None:
    outcomes = report["outcomes"]
    print(
        f"frames {report['frames']} in {report['seconds']:.1f} s = {report['frames_per_s']:.0f}"
        f" frames/s (seed {report['seed']}, corpus {report['corpus_frames']} frames)"
    )
    print(
        f"answered {outcomes['answered']}  closed {outcomes['closed']}  stalled"
        f" {outcomes['stalled']}  refused {report['refused']}  timed out"
        f" {report['connect_timeouts']}  first frame: {report['first_frame']}"
    )
    if len(report["phases"]) > 1:
        for name, phase in report["phases"].items():
            counts = "  ".join(f"{o} {n}" for o, n in phase["outcomes"].items())
            print(
                f"{name}: frames {phase['frames']}  {counts}  refused {phase['refused']}"
                f"  timed out {phase['connect_timeouts']}"
            )
    print(f"{'api':<26}{'frames':>8}{'answered':>10}{'closed':>9}{'stalled':>9}")
    for api, row in sorted(report["per_api"].items()):
        total = sum(row.values())
        print(f"{api:<26}{total:>8}{row['answered']:>10}{row['closed']:>9}{row['stalled']:>9}")
    print(
        f"crashes {len(report['crashes'])} {report['crashes']}  unhealthy {report['unhealthy']}"
        f"  acked {report['acked']}  lost {report['lost']}  extra {report['extra']}"
    )
    for problem in report["problems"]:
        print(f"PROBLEM: {problem}")
    for line in report["broker_errors"][:ERROR_LINES_SHOWN]:
        print(f"broker log: {line}")


def _problems(report: dict[str, Any], names: dict[int, str]) -> list[str]:
    problems = [f"broker {i} died" for i in report["crashes"]]
    for broker_id, broker in sorted(report["brokers"].items()):
        if not broker["answering"]:
            problems.append(f"broker {broker_id} does not answer ApiVersions")
        if broker["unlisted_brokers"]:
            missing = broker["unlisted_brokers"]
            problems.append(f"broker {broker_id}'s metadata does not list brokers {missing}")
    problems += [f"acknowledged record lost: {r}" for r in report["lost_records"][:10]]
    problems += [f"record never acknowledged: {r}" for r in report["extra_records"][:10]]
    if report["garbled_responses"]:
        problems.append(f"{report['garbled_responses']} responses were not Kafka frames")
    if report["broker_errors"]:
        # Every ERROR a broker logs is an unexpected failure (a handler exception, the bounds
        # check and kio disagreeing, a failed write): garbage must only ever close connections.
        problems.append(f"brokers logged {len(report['broker_errors'])} ERROR lines (below)")
    if not report["read_back_complete"]:
        problems.append(f"{ACKED_TOPIC} could not be read back to its high watermarks")
    problems += [f"bounds check refused a recorded frame: {r}" for r in report["bounds_refused"]]
    problems += [
        f"API {names.get(key, key)} ({key}) is advertised but missing from the corpus"
        for key in report["missing_apis"]
    ]
    return problems


@dataclass(frozen=True)
class Cluster:
    versions: dict[int, tuple[int, int]]  # advertised API ranges
    brokers: dict[int, str]  # node id -> address, as registered
    pids: dict[int, tuple[int | None, bool]]  # from scripts/cluster status (--dir only)


def _corpus_report(
    payloads: list[bytes], frames: list[CorpusFrame], refused: list[str], cluster: Cluster
) -> dict[str, Any]:
    names = _api_names()
    return {
        "corpus_frames": len(payloads),
        "covered_apis": sorted({names.get(f.api_key, str(f.api_key)) for f in frames}),
        "missing_apis": _missing_apis(cluster.versions, frames),
        "bounds_refused": refused,
    }


def _fire_report(tallies: dict[str, Tally], first: str, seconds: float) -> dict[str, Any]:
    """The totals, and per phase its frames, outcomes and refused connections."""
    tally = Tally()
    for phase in tallies.values():
        tally = tally.merged(phase)
    return {
        "frames": tally.frames,
        "seconds": round(seconds, 2),
        "frames_per_s": round(tally.frames / max(seconds, 1e-9), 1),
        "first_frame": first,
        "outcomes": tally.outcomes,
        "refused": tally.refused,
        "connect_timeouts": tally.connect_timeouts,
        "garbled_responses": tally.garbled,
        "per_api": tally.per_api,
        "per_operation": tally.per_operation,
        "phases": {
            name: {
                "frames": t.frames,
                "outcomes": t.outcomes,
                "refused": t.refused,
                "connect_timeouts": t.connect_timeouts,
            }
            for name, t in tallies.items()
        },
    }


def _records_report(writer: AckedWriter, stored: dict[tuple[int, int], bytes]) -> dict[str, Any]:
    lost, extra = _compare(writer.acked, stored)
    return {
        "acked": len(writer.acked),
        "produced": writer.produced,
        "delivery_errors": writer.delivery_errors[:20],
        "lost": len(lost),
        "extra": len(extra),
        "lost_records": lost[:100],
        "extra_records": extra[:100],
    }


def _fire_and_check(
    args: argparse.Namespace, frames: list[CorpusFrame], cluster: Cluster, seed: int
) -> dict[str, Any]:
    """Fire while the witness producer writes; then broker health and the witness records."""
    security: ClientSecurity = args.security
    create_acked_topic(args.bootstrap, ACKED_TOPIC, security)
    start_offsets = end_offsets(args.bootstrap, ACKED_TOPIC, security)
    writer = AckedWriter(args.bootstrap, ACKED_TOPIC, security)
    writer.start()
    log_start = log_positions(args.dir, list(cluster.brokers))
    _say(f"firing up to {args.frames} frames (seed {seed}) at {len(cluster.brokers)} brokers")
    started = time.monotonic()
    addresses = [cluster.brokers[i] for i in sorted(cluster.brokers)]
    tallies, first = asyncio.run(_fire_all(frames, cluster.versions, args, addresses, seed))
    seconds = time.monotonic() - started
    writer.stop()
    _say("checking brokers and acknowledged records")
    health = broker_health(cluster.brokers, args.dir, cluster.pids, security)
    stored, complete = read_back(args.bootstrap, ACKED_TOPIC, start_offsets, security)
    return {
        **_fire_report(tallies, first, seconds),
        **_health_report(health),
        **_records_report(writer, stored),
        "read_back_complete": complete,
        "broker_errors": new_error_lines(args.dir, log_start),
    }


def _discover(args: argparse.Namespace) -> Cluster:
    versions, brokers = first_answer(args.bootstrap.split(","), args.security)
    pids = process_status(args.dir) if args.dir else {}
    if args.dir and not pids:
        _say(f"scripts/cluster status --dir {args.dir} lists no broker: process checks are off")
    return Cluster(versions, brokers, pids)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    cluster = _discover(args)
    payloads, recording_failures = _obtain_corpus(args, cluster.brokers)
    for failure in recording_failures:
        _say(f"recording: {failure}")
    frames, refused = _analyse_corpus(payloads)
    if not frames:
        raise SystemExit("fuzz: the corpus holds no usable frame")
    report: dict[str, Any] = {
        "seed": seed,
        "recording_failures": recording_failures,
        **_corpus_report(payloads, frames, refused, cluster),
        **_fire_and_check(args, frames, cluster, seed),
    }
    report["problems"] = _problems(report, _api_names())
    _print_summary(report)
    if args.report_json is not None:
        args.report_json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
