"""GPT against the retrained LSTM at one budget: the gap between their mean test losses over the
seeds, and how far the seeds leave that gap uncertain.

`train_lm` draws the batches from a CPU generator seeded with the run's seed, and both models use
the same budget and T, so the GPT and the LSTM of one seed see the same batches in the same
order. Pairing by seed draws on that: the standard error of the mean paired difference (n - 1
degrees of freedom) is smaller than that of a difference of two means only where a seed that
is good for one model is good for the other too (their losses correlate across the seeds). The
batches are one source of a seed's luck; the initial weights, different for the two models, are
another, so the recorded losses need not move together. The gap is therefore taken seed by seed
where the seeds are the same and pairing narrows the interval; otherwise as a difference of two
means (Welch's, with the Welch-Satterthwaite degrees of freedom). Either way the 95% interval is
the mean gap ± t · SE, t Student's 0.975 quantile: with three seeds paired, 4.30 standard errors.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

MIN_SEEDS = 3  # of each model, for a verdict: fewer leave the spread of a difference unmeasured
CONFIDENCE = 0.95


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The incomplete beta function's continued fraction, by the modified Lentz method
    (Numerical Recipes, 6.4); converges fast for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300

    def nonzero(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1 / nonzero(1 - (a + b) * x / (a + 1))
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 / nonzero(1 + numerator * d)
            c = nonzero(1 + numerator / c)
            result *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return result


def _regularized_beta(a: float, b: float, x: float) -> float:
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(log_front + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _continued_fraction(a, b, x) / a
    return 1 - front * _continued_fraction(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * _regularized_beta(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p (p above one half), by bisection on `t_cdf`."""
    low, high = 0.0, 1e7
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2


@dataclass(frozen=True)
class Gap:
    """The recorded test losses of each model, seed -> nats, at one budget. The gap is the
    LSTM's mean minus the GPT's: above 0, the GPT has the lower loss."""

    gpt: dict[str, float]
    lstm: dict[str, float]

    @property
    def gpt_mean(self) -> float:
        return statistics.fmean(self.gpt.values())

    @property
    def lstm_mean(self) -> float:
        return statistics.fmean(self.lstm.values())

    @property
    def gap(self) -> float:
        return self.lstm_mean - self.gpt_mean

    @property
    def seeds(self) -> int:
        """The fewer of the two models' seed counts."""
        return min(len(self.gpt), len(self.lstm))

    @property
    def same_seeds(self) -> bool:
        """Both models measured on the same seeds, hence on the same batches seed by seed."""
        return set(self.gpt) == set(self.lstm)

    @property
    def differences(self) -> dict[str, float]:
        """LSTM minus GPT, seed by seed ({} where the seeds are not the same)."""
        return (
            {s: self.lstm[s] - self.gpt[s] for s in sorted(self.gpt, key=int)}
            if self.same_seeds
            else {}
        )

    @property
    def lower_in(self) -> int:
        """Seeds in which the model with the lower mean loss is also the lower one (same seeds
        only): all of them where the gap keeps its sign, fewer where the seeds disagree."""
        return sum(d * self.gap > 0 for d in self.differences.values())

    @property
    def correlation(self) -> float | None:
        """Pearson's r of the two models' losses across their seeds (same seeds, three or more):
        above 0 where a seed good for one model is good for the other, which is what pairing
        by seed draws on. None where it is not measured, or a model's seeds all scored alike."""
        if not self.same_seeds or len(self.gpt) < MIN_SEEDS:
            return None
        seeds = sorted(self.gpt, key=int)
        try:
            return statistics.correlation(
                [self.gpt[s] for s in seeds], [self.lstm[s] for s in seeds]
            )
        except statistics.StatisticsError:
            return None

    def _error(self, paired: bool) -> tuple[float, float]:
        """(standard error of the mean gap, degrees of freedom), paired by seed or as two means;
        two seeds of each model at least."""
        if paired:
            n = len(self.gpt)
            return statistics.stdev(self.differences.values()) / math.sqrt(n), n - 1
        n_gpt, n_lstm = len(self.gpt), len(self.lstm)
        gpt = statistics.variance(self.gpt.values()) / n_gpt
        lstm = statistics.variance(self.lstm.values()) / n_lstm
        if gpt + lstm == 0:
            return 0.0, n_gpt + n_lstm - 2
        df = (gpt + lstm) ** 2 / (gpt**2 / (n_gpt - 1) + lstm**2 / (n_lstm - 1))
        return math.sqrt(gpt + lstm), df

    def _half_width(self, paired: bool) -> float:
        error, df = self._error(paired)
        return t_quantile((1 + CONFIDENCE) / 2, df) * error

    @property
    def paired(self) -> bool:
        """Compared seed by seed: the same seeds, and (with two seeds or more) an interval no
        wider than the two means' would be."""
        if not self.same_seeds or self.seeds < 2:
            return self.same_seeds
        return self._half_width(True) <= self._half_width(False)

    @property
    def paired_half_width(self) -> float | None:
        """Half the interval that pairing by seed would give where it is not used, the seeds
        being the same: wider than the two means' (the notebook says so, with both)."""
        if not self.same_seeds or self.seeds < 2 or self.paired:
            return None
        return self._half_width(True)

    @property
    def standard_error(self) -> float | None:
        """Of the mean gap, from the seeds; None with fewer than two seeds of a model."""
        return None if self.seeds < 2 else self._error(self.paired)[0]

    @property
    def degrees_of_freedom(self) -> float | None:
        return None if self.seeds < 2 else self._error(self.paired)[1]

    @property
    def t(self) -> float | None:
        """Student's t for the 95% interval, at these degrees of freedom."""
        df = self.degrees_of_freedom
        return None if df is None else t_quantile((1 + CONFIDENCE) / 2, df)

    @property
    def half_width(self) -> float | None:
        """Half the gap's 95% interval: t standard errors."""
        return None if self.standard_error is None else self.t * self.standard_error

    @property
    def outcome(self) -> str:
        """ "unsettled" (fewer than MIN_SEEDS seeds of a model), "tie" (the interval holds 0),
        or "GPT" / "LSTM": the model ahead, its lower loss clear of the interval."""
        if self.seeds < MIN_SEEDS:
            return "unsettled"
        if abs(self.gap) <= self.half_width:
            return "tie"
        return "GPT" if self.gap > 0 else "LSTM"
