"""Acceptance by rank at a tree node (rules.rank_acceptance, issue #28): by hand, and against
the algorithms run token by token (SpecInfer's multi-step speculative sampling; a one-hot
top-k tree verified target-only), with fixed seeds and tolerances of 4 standard errors."""

from __future__ import annotations

import numpy as np
import pytest

from engine.acceptance import rules as d

P = np.array([[0.5, 0.3, 0.2]])
Q = np.array([[0.2, 0.5, 0.3]])


def test_each_rule_by_hand():
    # Rejection: sum min(p, q) = 0.7; the residual norm(max(0, p - q)) is (1, 0, 0), kept
    # by the next candidate with q(0) = 0.2, and stays (1, 0, 0).
    assert d.rank_acceptance(P, Q, "rejection", 3)[0] == pytest.approx([0.7, 0.06, 0.048])
    # A residual that moves: p = (.5, .4, .1), q = (.3, .1, .6): kept .5, residual (.4, .6,
    # 0); kept .4 of the rest (.2), residual (1/6, 5/6, 0); kept 1/6 + .1 of the .3 left.
    p, q = np.array([[0.5, 0.4, 0.1]]), np.array([[0.3, 0.1, 0.6]])
    third = 0.3 * (1 / 6 + 0.1)
    assert d.rank_acceptance(p, q, "rejection", 3)[0] == pytest.approx([0.5, 0.2, third])
    # Exact match: sum p q (1 - q)^c.
    second = 0.5 * 0.2 * 0.8 + 0.3 * 0.5 * 0.5 + 0.2 * 0.3 * 0.7
    assert d.rank_acceptance(P, Q, "exact_match", 2)[0] == pytest.approx([0.31, second])
    # One-hot: the draft offers tokens 1, 2, 0 (by q); each is accepted with its p.
    assert d.rank_acceptance(P, Q, "one_hot", 3)[0] == pytest.approx([0.3, 0.2, 0.5])
    assert d.rank_acceptance(P, Q, "greedy", 3)[0].tolist() == [0.0, 0.0, 1.0]
    # Typical: the threshold is 0.09 (see test_distributions); token 1 passes first.
    assert d.rank_acceptance(P, Q, "typical", 3)[0].tolist() == [1.0, 0.0, 0.0]
    # More candidates than tokens: the rest get nothing.
    assert d.rank_acceptance(P, Q, "one_hot", 5)[0] == pytest.approx([0.3, 0.2, 0.5, 0, 0])
    # The first rank is the rule's acceptance.
    for rule in d.RULES:
        first = d.rank_acceptance(P, Q, rule, 1)[:, 0]
        assert first == pytest.approx(d.acceptance(P, Q, rule))
    with pytest.raises(ValueError, match="unknown acceptance rule"):
        d.rank_acceptance(P, Q, "optimistic", 2)


def multi_step(p: np.ndarray, q: np.ndarray, ranks: int, runs: int, rng: np.random.Generator):
    """SpecInfer's Algorithm 2 at one node, ``runs`` times: each run draws a candidate from
    ``q`` and keeps it with ``min(1, p'(d)/q(d))``, else moves ``p'`` to the residual and
    tries the next; returns (the rank kept, 0 if none, and the emitted token) per run."""
    rank, token = np.zeros(runs, dtype=int), np.full(runs, -1)
    target = p.copy()
    for c in range(1, ranks + 1):
        open_ = rank == 0
        drawn = rng.choice(p.size, size=runs, p=q)
        keep = open_ & (rng.random(runs) < np.minimum(1.0, target[drawn] / q[drawn]))
        rank[keep], token[keep] = c, drawn[keep]
        rest = np.maximum(target - q, 0.0)
        target = rest / rest.sum()
    left = rank == 0  # every candidate rejected: the token comes from the last residual
    token[left] = rng.choice(p.size, size=int(left.sum()), p=target)
    return rank, token


def test_multi_step_speculative_sampling_token_by_token():
    """The rank at which a candidate is kept follows rank_acceptance, and the emitted token
    follows p (the rule is lossless, SpecInfer's Theorem 4.2)."""
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    runs, ranks = 40_000, 3
    rank, token = multi_step(p, q, ranks, runs, rng)
    kept = np.bincount(rank, minlength=ranks + 1)[1:] / runs
    expected = d.rank_acceptance(p[None], q[None], "rejection", ranks)[0]
    se = np.sqrt(expected * (1 - expected) / runs)
    assert np.all(np.abs(kept - expected) <= 4 * se)
    emitted = np.bincount(token, minlength=p.size) / runs
    assert np.all(np.abs(emitted - p) <= 4 * np.sqrt(p * (1 - p) / runs))


def test_a_one_hot_tree_verified_target_only():
    """The draft offers its top 3; the target samples x ~ p; the candidate equal to x is
    accepted (SGLang's target-only rule with thresholds 1)."""
    rng = np.random.default_rng(9)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    offered = list(np.argsort(-q, kind="stable")[:3])
    runs = 20_000
    x = rng.choice(p.size, size=runs, p=p)
    rank = np.array([offered.index(t) + 1 if t in offered else 0 for t in x])
    kept = np.bincount(rank, minlength=4)[1:] / runs
    expected = d.rank_acceptance(p[None], q[None], "one_hot", 3)[0]
    assert np.all(np.abs(kept - expected) <= 4 * np.sqrt(expected * (1 - expected) / runs))
