"""What every acceptance model declares and answers: :class:`AcceptanceModel`.

An acceptance model says where the per-position acceptance probability p_i comes from. It
is a registered part (:mod:`engine.core.parts`): a class in its own file in this package,
``@ACCEPTANCE.register`` above it, declaring its name, description and fields, and
answering :meth:`AcceptanceModel.position_probs` (and, for a model whose cycles are tied
together, :meth:`AcceptanceModel.regimes`). A model that calibration from serving logs can
fit (:mod:`engine.calibrate.fit`) says so (``fittable``) and answers the ``fit_*`` methods.

Every model gives the marginal ``P(n >= j)`` of one cycle (whose cumulative products are
that survival), from which the exact long-run figures follow. Part files import numpy
inside the methods that compute, so that the app's form, which reads every part's fields,
starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from engine.core.config import SpecConfig, part_fields
from engine.core.parts import ACCEPTANCE, Part

if TYPE_CHECKING:
    import numpy as np

    from engine.acceptance.sampler import PrefixSampler


class AcceptanceModel(Part):
    """Base class of the acceptance models. Positions are 1-based in the docs, 0-based in
    arrays.

    What a model supports (class attributes): ``cycles_independent``, whether a cycle's
    accepted count is independent of every other cycle's (all models but markov; then one
    uniform per cycle through the marginal survival is exact, else the stepwise engine
    draws the regime chain); ``confidences``, whether each draft token carries a
    confidence q that the draft sees (threshold policies need it); ``original``, whether
    the original simulator had it; ``exact``, whether the exact figures hold.

    Calibration (:mod:`engine.calibrate.fit`) fits the models that declare ``fittable``, by
    maximum likelihood on per-position binomial counts (``accepted_i`` of ``reached_i``
    drafts that drafted position i had token i accepted; :mod:`engine.acceptance.fitting`),
    through :meth:`fit`, :meth:`fit_parameters`, :meth:`fit_interval` and
    :meth:`fit_posterior`. ``rate_per_position``: the model has one free parameter per
    observed position (per_position), not a fixed number. ``constant_rate_field``: the key
    of the one field that is the conditional rate at every position (fixed), the model a
    mean acceptance length alone can fit; None for the others.
    """

    kind = "acceptance"
    cycles_independent: ClassVar[bool] = True
    confidences: ClassVar[bool] = False
    original: ClassVar[bool] = False
    exact: ClassVar[bool] = True
    fittable: ClassVar[bool] = False
    rate_per_position: ClassVar[bool] = False
    constant_rate_field: ClassVar[str | None] = None

    @property
    def stepwise(self) -> bool:
        """Whether the Monte Carlo runs cycle by cycle (cycles tied together)."""
        return not self.cycles_independent

    @property
    def reads(self) -> tuple[str, ...]:
        """The keys of the fields the model reads (its parameters)."""
        return part_fields(ACCEPTANCE.selector, self.name)

    def position_probs(self, config: Any, k: int) -> np.ndarray:
        """Marginal P(accept) of draft positions 1..k, as a float array of length k in [0, 1]."""
        raise NotImplementedError

    def positions(self, config: Any) -> int | None:
        """How many positions the model gives values for (None: any number)."""
        return None

    def params_text(self, config: Any) -> str:
        """The model's parameters in words: "acceptance 0.8"."""
        return ", ".join(f"{key.rsplit('.', 1)[-1]} {config.get(key)}" for key in self.reads)

    def label(self, config: Any) -> str:
        return f"{self.name} ({self.params_text(config)})"

    def prefix_sampler(self, config: Any) -> PrefixSampler:
        """The Monte Carlo sampler of the accepted prefix of a cycle of K drafts (one uniform
        per cycle, :class:`~engine.acceptance.sampler.PrefixSampler`), from the survival of
        :meth:`position_probs`. Configurations with the same survival share one (cached)."""
        import numpy as np

        from engine.acceptance.sampler import _prefix_sampler

        survival = np.cumprod(self.position_probs(config, config.k))
        return _prefix_sampler(survival.astype(np.float64).tobytes())

    def accept_token(self, config: Any, rng: np.random.Generator, position: int) -> bool:
        """One accept test for the draft token at 1-based ``position`` (reference engine)."""
        return bool(rng.random() < self.position_probs(config, position)[position - 1])

    def regimes(self, config: Any, k: int) -> tuple[np.ndarray, float, np.ndarray]:
        """(survival, stay, mix) of the hidden regime chain: ``survival[g, j] = P(n >= j |
        regime g)`` for j = 0..k, a (G, k + 1) array; the regime is kept from one cycle to
        the next with probability ``stay``, else redrawn from ``mix`` (G,). One regime for
        every model but markov."""
        import numpy as np

        surv = np.concatenate(([1.0], np.cumprod(self.position_probs(config, k))))
        return surv[None, :], 1.0, np.ones(1)

    # ------------------------------------------------------------------ calibration's fit

    def scenario_values(self, params: dict[str, object]) -> dict[str, object]:
        """The SpecConfig values of the model with these parameters (by field key):
        ``draft_model`` first."""
        return {ACCEPTANCE.selector: self.name, **params}

    def fit_parameters(self, m: int) -> int:
        """Its free parameters when fitted to ``m`` positions: ``m`` for a model with a rate
        per position, else one per field it reads."""
        return m if self.rate_per_position else len(self.reads)

    def fit(self, accepted: np.ndarray, reached: np.ndarray) -> list[dict[str, object]]:
        """Maximum-likelihood SpecConfig values (:meth:`scenario_values`) for each row of
        the per-position counts ``accepted`` and ``reached``, float arrays (D, m) (a row
        reached 0 times at no position): D dicts. Only a ``fittable`` model answers."""
        raise NotImplementedError(f"the {self.name} model cannot be fitted from counts")

    def fit_interval(
        self, accepted: np.ndarray, reached: np.ndarray
    ) -> dict[str, tuple[float, float]]:
        """95 % intervals of the fitted parameters (by field key) from the counts (m,), where
        the model has one in closed form; none by default."""
        return {}

    def fit_posterior(
        self,
        values: dict[str, object],
        accepted: np.ndarray,
        reached: np.ndarray,
        draws: int,
        rng: np.random.Generator,
    ) -> list[dict[str, object]]:
        """``draws`` samples of the SpecConfig values fitted to the counts (m,) (``values``),
        carrying the fit's uncertainty. By default a parametric bootstrap: counts redrawn
        from the fitted rates (:func:`engine.acceptance.fitting.bootstrap_counts`), the
        model refitted to each."""
        import numpy as np

        from engine.acceptance.fitting import bootstrap_counts

        config = SpecConfig().replace(**values)
        rates = np.asarray(self.position_probs(config, accepted.size), dtype=float)
        return self.fit(*bootstrap_counts(rng, rates, accepted, reached, draws))
