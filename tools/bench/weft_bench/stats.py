"""Medians and spreads of repeated measurements."""
import math
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


def _betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (Numerical Recipes' betacf)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t, df):
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def student_t_quantile(p, df):
    """The t with P(T <= t) = p (0.5 < p < 1), by bisection on the CDF."""
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def jmh_score(values, confidence=0.999):
    """JMH's Score and Error of repeated measurements: the mean, and the half-width of its `confidence`
    interval with Student's t (t(1 - (1 - confidence) / 2, n - 1) x stdev / sqrt(n)); Error is None
    (JMH prints NaN) for fewer than two values. (score, error, count)."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None, 0
    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return mean, None, n
    t = student_t_quantile(1.0 - (1.0 - confidence) / 2.0, n - 1)
    return mean, t * statistics.stdev(values) / math.sqrt(n), n
