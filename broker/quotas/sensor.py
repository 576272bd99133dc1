"""Kafka's quota maths: a rate over sampled windows and the throttle time a violation earns.

A `SampledRate` keeps `quota.window.num` samples of `quota.window.size.seconds` each, plus one
for a sample overlapping the oldest window (Kafka 3.9's Rate over a WindowedSum): a record lands
in the current sample, or starts the next one once the current sample is a window old; a sample
whose last record is older than all the windows together is reset before a measurement. The
rate divides the sum by the time since the oldest sample began, counted as at least
`samples - 1` full windows so that a burst right after a quiet period is not measured over a
few milliseconds. A recording that takes the rate above the bound is kept and earns a throttle time
of `(rate - bound) / bound * window`: how long the client must stay quiet for the rate to fall
back to the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    samples: int  # quota.window.num
    window_ms: int  # quota.window.size.seconds, in milliseconds


class _Sample:
    __slots__ = ("event_count", "last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.start_ms = now_ms
        self.last_event_ms = now_ms


class _SampledStat:
    """Kafka's SampledStat: a ring of samples, each `window_ms` long."""

    def __init__(self, window: QuotaWindow) -> None:
        self.window = window
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One slot more than the samples: the oldest may overlap the measured window.
        self._current = (self._current + 1) % (self.window.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def purge_obsolete(self, now_ms: int) -> None:
        expire_age_ms = self.window.samples * self.window.window_ms
        for sample in self._samples:
            # A sample that began before the window but has records within it is kept.
            if now_ms - sample.last_event_ms >= expire_age_ms:
                sample.reset(now_ms)

    def oldest(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return min(self._samples, key=lambda sample: sample.start_ms)

    def totals(self, now_ms: int) -> tuple[float, int]:
        """(sum of values, number of events) over the live samples."""
        self.purge_obsolete(now_ms)
        return (
            sum(sample.value for sample in self._samples),
            sum(sample.event_count for sample in self._samples),
        )


class SampledRate:
    """Kafka's Rate (per second) over a WindowedSum."""

    def __init__(self, window: QuotaWindow) -> None:
        self._stat = _SampledStat(window)

    def record(self, value: float, now_ms: int) -> None:
        self._stat.record(value, now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        stat = self._stat
        stat.purge_obsolete(now_ms)
        elapsed_ms = now_ms - stat.oldest(now_ms).start_ms
        window_ms = stat.window.window_ms
        full_windows = elapsed_ms // window_ms
        min_full_windows = stat.window.samples - 1
        if full_windows < min_full_windows:
            elapsed_ms += (min_full_windows - full_windows) * window_ms
        return max(elapsed_ms, 1)  # a rate over no time at all is undefined

    def measure(self, now_ms: int) -> float:
        total, _ = self._stat.totals(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000)


class SampledAvg:
    """Kafka's Avg (NaN until something is recorded), as the throttle-time metric uses it
    with the default metric config: 2 samples of 30 s."""

    def __init__(self, window: QuotaWindow = QuotaWindow(2, 30_000)) -> None:
        self._stat = _SampledStat(window)

    def record(self, value: float, now_ms: int) -> None:
        self._stat.record(value, now_ms)

    def measure(self, now_ms: int) -> float:
        total, count = self._stat.totals(now_ms)
        return total / count if count else math.nan


def throttle_time_ms(rate: float, bound: float, window_size_ms: int) -> int:
    """Kafka's QuotaUtils.throttleTime: the quiet time that brings `rate` back to `bound`."""
    return math.floor((rate - bound) / bound * window_size_ms + 0.5)  # Java's Math.round


class QuotaSensor:
    """One (user, client-id)'s rate against its bound: Kafka's quota Sensor."""

    def __init__(self, window: QuotaWindow) -> None:
        self.rate = SampledRate(window)

    def record_and_get_throttle_time_ms(self, value: float, now_ms: int, bound: float) -> int:
        """Record `value`; when the rate is then above `bound`, the throttle time (the value
        stays recorded, as in Kafka)."""
        self.rate.record(value, now_ms)
        rate = self.rate.measure(now_ms)
        if rate <= bound:
            return 0
        return throttle_time_ms(rate, bound, self.rate.window_size_ms(now_ms))
