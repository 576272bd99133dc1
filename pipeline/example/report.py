"""Progress lines while the example runs, and the summary table at the end."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery


@dataclass
class QueryTally:
    """Input rows per query, summed over every progress report seen (Spark keeps only the
    last 100 reports, so they are folded in as they arrive)."""

    rows: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    seen: dict[str, set[int]] = field(default_factory=dict)

    def update(self, query: StreamingQuery) -> None:
        name = query.name or str(query.id)
        seen = self.seen.setdefault(name, set())
        for progress in query.recentProgress:
            batch = int(progress["batchId"])
            if batch in seen or progress["numInputRows"] == 0:
                continue
            seen.add(batch)
            self.rows[name] += int(progress["numInputRows"])
            self.seconds[name] += progress["durationMs"].get("triggerExecution", 0) / 1000

    def rate(self, name: str) -> float:
        return self.rows[name] / self.seconds[name] if self.seconds[name] else 0.0


def progress_line(
    elapsed_s: float, produced: int, queries: list[StreamingQuery], tally: QueryTally
) -> str:
    parts = [f"[{elapsed_s:5.0f} s] produced {produced:>7}"]
    for query in queries:
        tally.update(query)
        name = query.name or "?"
        parts.append(f"{name}: {tally.rows[name]:>7} rows")
    return " | ".join(parts)


def summary_table(
    spark: SparkSession, archive_path: str, produced: Counter[str], replay_table: str
) -> str:
    archive = spark.read.parquet(archive_path)
    archived = {r["country"]: r["count"] for r in archive.groupBy("country").count().collect()}
    replayed = {r["country"]: r["count"] for r in spark.table(replay_table).collect()}
    rows = [("country", "produced", "archived", "re-read")]
    for country in sorted(set(produced) | set(archived) | set(replayed)):
        rows.append(
            (
                country,
                str(produced.get(country, 0)),
                str(archived.get(country, 0)),
                str(replayed.get(country, 0)),
            )
        )
    rows.append(
        (
            "total",
            str(sum(produced.values())),
            str(sum(archived.values())),
            str(sum(replayed.values())),
        )
    )
    distinct = archive.select("event_id").distinct().count()
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append(f"archive: {archive.count()} rows, {distinct} distinct event ids")
    return "\n".join(lines)
