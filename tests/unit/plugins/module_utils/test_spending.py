# -*- coding: utf-8 -*-
# Copyright: (c) 2026, jetson_llm.vllm maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Error spending over a sequential benchmark's looks, and the far quantiles its early looks need."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
from statistics import NormalDist

import pytest

from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import bootstrap as B
from ansible_collections.jetson_llm.vllm.plugins.module_utils._server import sequential as Q
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import spending as S
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision import verdict as V
from ansible_collections.jetson_llm.vllm.plugins.module_utils._decision.spec_checks import SpeculativeInputError


def z_of(confidence):
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


@pytest.mark.parametrize('looks', [1, 2, 3, 6, 12, 1250])
def test_the_looks_spend_exactly_the_fixed_protocols_five_percent(looks):
    levels = [1.0 - confidence for _look, confidence in S.schedule(looks)]
    assert sum(levels) == pytest.approx(0.05, abs=1e-12)
    assert all(level >= 0 for level in levels)
    assert all(b >= a - 1e-15 for a, b in zip(levels, levels[1:]))   # O'Brien-Fleming-type: little early, most late


def test_one_look_is_the_fixed_protocol_and_six_looks_follow_lan_demets():
    assert S.look_confidence(1, 1) == pytest.approx(0.95, abs=1e-12)
    # alpha(t) = 2 - 2 Phi(1.96 / sqrt(t)): the z of each look (the role's 6 rounds at c=1, 3 at c=8)
    assert [z_of(c) for _k, c in S.schedule(6)] == pytest.approx([4.80, 3.395, 2.814, 2.549, 2.422, 2.361], abs=0.003)
    assert [z_of(c) for _k, c in S.schedule(3)] == pytest.approx([3.395, 2.416, 2.125], abs=0.003)
    assert S.spent(0.5) == pytest.approx(2 - 2 * NormalDist().cdf(1.959964 / math.sqrt(0.5)), abs=1e-6)
    assert S.spent(0.0) == 0.0 and S.spent(2.0) == pytest.approx(0.05)
    for bad in (0, 7):
        with pytest.raises(ValueError, match='numbered from 1'):
            S.look_alpha(bad, 6)


@pytest.mark.parametrize('df,p,expected', [(3, 0.975, 3.182), (4, 0.99, 3.747), (5, 0.9992, 6.194),
                                           (3, 0.9999995, 131.0), (12, 0.975, 2.179), (30, 0.975, 2.042)])
def test_t_quantile_is_exact_far_into_the_tail(df, p, expected):
    """The early looks ask for quantiles a series expansion gets wrong (3 degrees of freedom at 0.999999: 103, not
    70); bisection on the exact distribution function gets them (tables; df 3 closed form for the far one)."""
    got = B.t_quantile(p, df)
    assert got == pytest.approx(expected, rel=2e-3 if expected < 100 else 0.01)
    if df == 3:   # the closed form of t with 3 degrees of freedom
        x = got / math.sqrt(3.0)
        assert 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi == pytest.approx(p, abs=1e-9)


def test_a_stricter_look_stretches_the_interval_around_the_measured_ratio():
    interval = (0.9, 1.2)
    low, high = B.stretch(interval, 1.05, 2.0)
    assert math.log(1.05) - math.log(low) == pytest.approx(2 * (math.log(1.05) - math.log(0.9)))
    assert math.log(high) - math.log(1.05) == pytest.approx(2 * (math.log(1.2) - math.log(1.05)))
    assert B.stretch((0.0, 1.2), 1.05, 3.0)[0] == 0.0
    # single requests: the normal quantiles' ratio; waves: Student's t with the blocks' degrees of freedom
    assert B.stretch_factor(0.999, 0.95, 24, 16, 1) == pytest.approx(z_of(0.999) / z_of(0.95))
    assert B.stretch_factor(0.999, 0.95, 24, 16, 8) == pytest.approx(B.t_quantile(0.9995, 3) / B.t_quantile(0.975, 3))
    assert B.stretch_factor(0.95, 0.95, 24, 16, 8) == pytest.approx(1.0)


def test_the_sequential_looks_and_their_confidence_per_level():
    looks = Q.planned_looks({1: 8, 8: 16}, 48)
    assert looks == {1: 6, 8: 3}
    assert Q.planned_looks({1: 8, 8: 16}, 50) == {1: 7, 8: 4}   # a last, shorter round is a look too
    first = Q.confidences(looks, {1: 1, 8: 1})
    assert first['c1'] == pytest.approx(0.9999984, abs=1e-7) and first['c8'] == pytest.approx(0.999313, abs=1e-6)
    assert Q.confidences(looks, {1: 2, 8: 0}) == {'c1': pytest.approx(S.look_confidence(2, 6)), 'c8': 0.95}
    # hundreds of looks: the first would round to 1.0 (an infinite interval); clamped, within 1e-12
    assert Q.look_confidence(1, 1250) == V.MAX_CONFIDENCE < 1.0


@pytest.mark.parametrize('bad', [0.5, 0.94, 1.0, float('nan'), float('inf'), 'high', True, {'c1': 2.0}, {'c3': 0.99}])
def test_a_confidence_outside_95_percent_to_1_is_an_error_naming_it(bad):
    base = {'config': {'sequential': None}}
    with pytest.raises(SpeculativeInputError, match='confidence'):
        V._confidence_of(base, bad)  # pylint: disable=protected-access
    with pytest.raises(SpeculativeInputError, match="candidate's config.sequential.confidence"):
        V._confidence_of({'config': {'sequential': {'confidence': bad}}}, None)  # pylint: disable=protected-access


def test_the_level_text_never_says_100_percent():
    assert V.level_text(0.95) == '95 %'
    assert V.level_text(0.999313) == '99.93 %'
    assert V.level_text(0.9999984) == '99.9998 %'
    assert V.level_text(V.MAX_CONFIDENCE) != '100 %' and V.level_text(V.MAX_CONFIDENCE).startswith('99.999')
