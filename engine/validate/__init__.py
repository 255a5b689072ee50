"""Published speculative-decoding measurements and spectui's predictions of them.

``spectui validate`` and docs/validation.md. The table (``data/measurements.toml``,
:mod:`engine.validate.table`) holds one entry per published measurement with its source and
setup; :mod:`engine.validate.predict` predicts each two ways (from specs: the roofline with
one global set of efficiencies; calibrated: the cost fitted to the rest of the entry's series,
leave one out); :mod:`engine.validate.report` gives the errors, verdicts and medians.
"""
