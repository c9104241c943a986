"""Medians and spreads of repeated measurements."""
import statistics


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread_pct(values):
    """(max - min) / median of the repeats, in percent: the noise of one cell."""
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return 0.0
    m = statistics.median(values)
    return (max(values) - min(values)) / m * 100.0 if m else 0.0
