"""``clgrad.nn.functional``: the functional NN API, gathered from ``clgrad.ops`` modules' ``FUNCTIONAL`` lists."""
from __future__ import annotations

from ..ops import activations as _activations
from ..ops import conv as _conv
from ..ops import conv3d as _conv3d
from ..ops import distance as _distance
from ..ops import joins as _joins
from ..ops import linalg as _linalg
from ..ops import losses as _losses
from ..ops import losses_extra as _losses_extra
from ..ops import nnops as _nnops
from ..ops import norms as _norms
from ..ops import padding as _padding
from ..ops import pixel as _pixel
from ..ops import pool3d as _pool3d
from ..ops import pool_extra as _pool_extra
from ..ops import pooling as _pooling
from ..ops import resample as _resample

for _m in (_conv, _pooling, _resample, _nnops, _norms, _linalg, _losses, _joins, _padding, _pixel,
           _activations, _distance, _losses_extra, _conv3d, _pool3d, _pool_extra):
    globals().update({name: getattr(_m, name) for name in _m.FUNCTIONAL})
del _m
from ..ops.math import FUNCTIONAL_ACTIVATIONS as _ACT  # noqa: E402

globals().update(_ACT)


# issue 17's remaining nn.functional ops (attention, grid sampling, embedding bags, CTC, the small norms)
from ..ops import attention as _attention  # noqa: E402
from ..ops import ctc as _ctc  # noqa: E402
from ..ops import embedding_bag as _embedding_bag  # noqa: E402
from ..ops import grid_sample as _grid_sample  # noqa: E402
from ..ops import nn_misc as _nn_misc  # noqa: E402

for _m in (_attention, _grid_sample, _embedding_bag, _ctc, _nn_misc):
    globals().update({name: getattr(_m, name) for name in _m.FUNCTIONAL})
del _m
