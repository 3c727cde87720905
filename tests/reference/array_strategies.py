"""Hypothesis strategies shared by the gradient and forward-AD tests: float64 arrays of
small shapes, broadcastable pairs, and a guard that keeps values away from kinks and poles."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


def values(shape, low=-2.0, high=2.0):
    return hnp.arrays(np.float64, shape, elements=st.floats(low, high, allow_nan=False, width=64))


def away_from_zero(a, margin=0.2):
    """Values at least ``margin`` from 0 (for kinks and poles: abs, relu, division)."""
    return np.where(a >= 0, a + margin, a - margin)


@st.composite
def one_array(draw, shapes=small_shapes, low=-2.0, high=2.0):
    return draw(values(draw(shapes), low, high))


@st.composite
def broadcast_pair(draw, low=-2.0, high=2.0):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    a, b = shapes.input_shapes
    return draw(values(a, low, high)), draw(values(b, low, high))
