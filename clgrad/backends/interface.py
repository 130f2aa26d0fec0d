"""The primitives every backend implements, as a ``typing.Protocol``: everything above the backends is composed
from these. The cpu backend (numpy) is the reference; tests/backends/test_interface.py checks that every backend
has each member with the same call signature.

Tensor arguments are descriptors: anything with ``_storage`` (a Storage), ``dtype``, ``shape``/``_shape``,
``_strides``, ``_offset`` (in elements), ``numel()``, ``dim()`` and ``device``; a Tensor is one, and so is
``common.Desc``. "Contiguous" means row-major dense. Outputs are written in place; nothing is returned unless said.
OpenCL launches only enqueue: errors found on the device (bounds flags) surface at the next read or synchronize.

Backend-specific extras outside the protocol: the cpu backend's ``wrap`` (a Storage over a numpy array, for
``from_numpy``) and the OpenCL backend's ``fused_launcher`` (``clgrad.compile``'s generated kernels).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .. import dtypes as D
from ..storage import Storage
from .common import Window


class FusedOptim(Protocol):
    """One fused kernel per parameter and step. Optimizers call it when every tensor is contiguous, of the
    parameter's float dtype, on its device, and otherwise compose the same update (same roundings, same order)."""

    def adam_step(self, p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, lr, beta1, beta2, eps, weight_decay,
                  decoupled, maximize, step) -> None:
        """One Adam/AdamW step of ``p`` in place (PyTorch's single-tensor algorithm); ``max_exp_avg_sq`` None
        unless amsgrad; ``decoupled``: AdamW's weight decay."""

    def sgd_step(self, p, grad, buf, *, lr, momentum, dampening, weight_decay, nesterov, maximize, first) -> None:
        """One SGD step of ``p`` in place; ``buf`` (the momentum buffer, or None) is set from the gradient when
        ``first``."""


class FusedRNN(Protocol):
    """One launch per LSTM time step. ``nn.LSTM`` calls it for float32/float64 and otherwise composes the step from
    elementwise table ops, whose expressions the kernels evaluate in the same order (both round alike)."""

    def lstm_step(self, gi, hw, bias, c_prev, pre, c, h) -> None:
        """``pre = gi + (hw + bias)`` (gates [N, 4H]), then the new cell ``c`` and hidden ``h`` [N, H] from
        ``c_prev``. Every tensor contiguous; ``bias`` [4H] or None."""

    def lstm_step_backward(self, grad_h, dh_next, grad_c, dc_next, pre, c, c_prev, dpre, dc_prev) -> None:
        """The gates' gradients ``dpre`` [N, 4H] and ``dc_prev`` [N, H] of one step, from the step's incoming
        gradients (``grad_h + dh_next``, ``grad_c + dc_next``) and its saved gates, cell and previous cell;
        ``dh_next`` and ``dc_next`` None: a lone step (LSTMCell), whose incoming gradients are grad_h and grad_c."""

    def lstm_seq_usable(self, like, hidden: int) -> bool:
        """Whether the two methods below serve a sequence of ``like``'s dtype and device with ``hidden`` units."""

    def lstm_seq_step(self, gi, h, w_t, bias, c_prev, pre, c, h_new) -> None:
        """A step with its recurrent product ``h @ w_t`` (W_hh^T [H, 4H]) in the same launch, else as ``lstm_step``."""

    def lstm_seq_step_backward(self, grad_h, dpre_next, w, grad_c, dc, pre, c, c_prev, dpre) -> None:
        """A step's backward with ``dh = grad_h + dpre_next @ w`` (W_hh [4H, H]; ``dpre_next`` None at the last
        step) in the same launch; ``dc`` holds dc_next and receives dc_prev."""


class FusedConv(Protocol):
    """Implicit-GEMM convolutions: the product reads x through the im2col index map (no column matrix). ops/conv.py
    calls them when ``usable(x, rows, taps, depth)``, and otherwise runs im2col + matmul (results agree to float
    rounding)."""

    def usable(self, x, rows: int, taps: int, depth: int) -> bool:
        """Whether to use them for x and a product of ``rows`` output channels (per group) over ``taps`` window
        taps (C/groups*kh*kw), summing ``depth`` terms per output."""

    def conv(self, out, x, w, bias, win: Window, groups: int, relu: bool = False) -> None:
        """out [N, Co, oh, ow] = conv(x, w [groups, Co/groups, C/groups*kh*kw]) (+ bias [Co]) (then ReLU)."""

    def conv_weight(self, out, x, gy, win: Window) -> None:
        """out [Z, Co, C*kh*kw]: the groups=1 weight gradient summed over Z chunks of the batch; gy [N, Co, oh*ow]."""

    def weight_chunks(self, n: int, co: int, taps: int) -> int:
        """The Z that conv_weight should write for n images."""


class Backend(Protocol):
    name: str
    fused_optim: FusedOptim | None  # None: optimizers compose their steps from elementwise ops
    fused_rnn: FusedRNN | None  # None: nn.LSTM composes its steps from elementwise ops
    fused_conv: FusedConv | None  # None: convolutions run as im2col + matmul

    # ---- memory ---------------------------------------------------------------------------------------
    def empty(self, dev, dt: D.dtype, size: int) -> Storage:
        """A new Storage of ``size`` elements of ``dt`` on ``dev`` (a clgrad.device), uninitialised."""

    def write(self, storage: Storage, host: np.ndarray, offset: int = 0) -> None:
        """Copy ``host`` (converted to the storage's dtype, C order) into the storage from element ``offset``;
        returns when ``host`` may be reused. RuntimeError when it would overflow the storage."""

    def read(self, t) -> np.ndarray:
        """A contiguous host copy of ``t`` (waits for the device; raises a deferred bounds error first)."""

    def synchronize(self, dev=None) -> None:
        """Wait for every launch on ``dev`` (every device when None); raises a deferred bounds error."""

    # ---- elementwise ----------------------------------------------------------------------------------
    def elementwise(self, op: str, out, inputs, compute: D.dtype) -> None:
        """``out = OPS[op](*inputs)``: inputs are tensors broadcast to ``out``'s shape (any strides) or Python
        scalars, converted to ``compute`` first (scalars unrounded), the result stored as ``out``'s dtype.
        Copy, cast and fill are the ``identity`` op."""

    def elementwise_launcher(self, op: str, out, inputs, compute: D.dtype):
        """A ``launch(out, inputs)`` doing ``elementwise(op, out, inputs, compute)`` for any later operands of the
        same dtypes, shape and strides (offsets and scalar values may differ): the ops layer's fast path."""

    # ---- reduce, matmul, random -----------------------------------------------------------------------
    def reduce(self, op: str, src, dims, out, out_idx=None) -> None:
        """Reduce ``src`` over ``dims`` into ``out`` (contiguous, ``src``'s shape with 1 on ``dims``), ``op`` one of
        sum/prod/max/min/all/any, accumulating in ``common.acc_dtype``; for max/min ``out_idx`` (int64, same
        shape) also gets the first position of the result in the reduced dims (row-major; NaN wins)."""

    def matmul(self, out, a, b, bias=None) -> None:
        """out[i] = a[i] @ b[i] (+ bias) for a [B, M, K], b [B, K, N] of any strides, out contiguous [B, M, N];
        an optional ``bias`` [N] is added to the product rounded to out's dtype. float16 accumulates in float32,
        integers wrap in their own width; bool raises NotImplementedError."""

    def matmul_sum(self, out, a, b) -> None:
        """out[z] = the sum of a[i] @ b[i] over chunk z of the batch (chunks of ceil(B / Z) batches), out
        contiguous [Z, M, N] (a conv's weight gradient as one product)."""

    def random(self, dist: str, out, seed: int, offset: int, p0, p1) -> None:
        """Fill ``out`` (any layout) with ``dist`` (uniform/normal/randint/bernoulli, parameters p0, p1): element i
        in row-major order uses Philox4x32-10 counter ``offset + i`` (``philox.sample`` defines the stream)."""

    def random_gamma(self, out, alpha, seed: int, offset: int) -> None:
        """Fill ``out`` (contiguous float32/float64) with Gamma(alpha, 1) samples for ``alpha`` (contiguous, out's
        shape and dtype): Marsaglia-Tsang, element i's rejection rounds from Philox counters derived from
        ``offset + i``, looping until accepted (``cpu_random.gamma`` defines the stream)."""

    # ---- index ----------------------------------------------------------------------------------------
    def index_gather(self, out, src, indices, wrap: bool = True, checked: bool = True):
        """``out[i] = src[i + sum_k indices[k][i] * step_k]`` over the index space ``out.shape``; ``indices`` are
        (int64 index tensor restrided over the space, size of the indexed dim, its stride). Returns None, or
        (k, value) of the first out-of-range index; negative indices count from the end when ``wrap``."""

    def index_put(self, dst, value, indices, mode: str = "store", wrap: bool = True, checked: bool = True):
        """``dst[i + sum_k indices[k][i] * step_k] (op)= value[i]`` with ``mode`` store (the last duplicate wins),
        add or mul (every duplicate counts); ``value`` a tensor restrided over the space or a numpy scalar of dst's
        dtype. Returns as ``index_gather``."""

    def nonzero(self, src, alloc):
        """The coordinates of ``src``'s nonzero elements in row-major order, written into ``alloc(count)`` (an int64
        tensor (count, ndim)), which is returned."""

    # ---- scan, sort, gather/scatter along a dim --------------------------------------------------------
    def scan(self, op: str, src, dim: int, out, reverse: bool = False) -> None:
        """Inclusive cumsum/cumprod of ``src`` along ``dim`` into ``out`` (same shape), from the end if ``reverse``."""

    def sort(self, src, dim: int, descending: bool, values, indices) -> None:
        """Stable sort along ``dim`` (NaN last ascending and first descending; equal keys keep their order) into fresh contiguous ``values`` and
        int64 ``indices`` of ``src``'s shape."""

    def gather_dim(self, src, dim: int, index, out) -> None:
        """``out[..., j, ...] = src[..., index[..., j, ...], ...]`` (indices already checked)."""

    def scatter_dim(self, src, dim: int, index, out, mask=None) -> None:
        """``out[..., index[..., j, ...], ...] = src[..., j, ...]`` (``j`` itself when src is None) where ``mask``
        is nonzero (everywhere when None)."""

    def bincount(self, input, weights, out) -> None:
        """``out[b]`` = how many entries of the 1-D int ``input`` equal b, or the sum of their ``weights``."""

    # ---- conv, pooling, interpolation (4-D [N, C, H, W]; outputs contiguous) ---------------------------
    def im2col(self, cols, x, win: Window) -> None:
        """cols [N, C*kh*kw, oh*ow] (any strides) = the window taps of x [N, C, H, W], zero outside x."""

    def col2im(self, out, cols, win: Window) -> None:
        """im2col's adjoint: every column entry (cols of any strides) added back at the input position it came from."""

    def conv_bias(self, out, bias) -> None:
        """out [N, C, ...] (contiguous) += bias [C] per channel."""

    def max_pool2d(self, out, indices, x, win: Window) -> None:
        """Window maxima and their positions ``h * W + w`` in each input plane (int64), by PyTorch's scan: the
        first maximum wins, a NaN always replaces (so the last NaN wins)."""

    def max_pool2d_backward(self, grad_in, grad_out, indices, win: Window) -> None:
        """``grad_in`` = ``grad_out`` added at the recorded positions (zero elsewhere)."""

    def pool_gather(self, out, src, indices) -> None:
        """``out`` = ``src`` (contiguous) read at the recorded positions (max-pool's double backward)."""

    def avg_pool2d(self, out, x, win: Window, include_pad: bool, divisor: int | None) -> None:
        """Window means, dividing by ``divisor`` or by PyTorch's count (padding counts when ``include_pad``)."""

    def avg_pool2d_backward(self, grad_in, grad_out, win: Window, include_pad: bool, divisor: int | None) -> None:
        """avg_pool2d's gradient."""

    def adaptive_avg_pool2d(self, out, x) -> None:
        """Means over PyTorch's adaptive windows of the output size ``out.shape[2:]``."""

    def adaptive_avg_pool2d_backward(self, grad_in, grad_out) -> None:
        """adaptive_avg_pool2d's gradient."""

    def upsample2d(self, out, x, th, tw) -> None:
        """Nearest or bilinear interpolation through per-axis tables (``cpu_conv.Interp``: the same sample points
        on every backend)."""

    def upsample2d_backward(self, grad_in, grad_out, th, tw) -> None:
        """upsample2d's gradient, race-free (each input gathers the outputs that read it)."""

    # ---- nn -------------------------------------------------------------------------------------------
    def softmax(self, mode: str, out, inputs, dim: int) -> None:
        """Row-wise ``mode`` along ``dim``: softmax / log_softmax of inputs=(x,), or softmax_backward /
        log_softmax_backward of inputs=(grad, output); ``out``'s dtype sets the computation's (float32 for
        float16)."""

    def nll(self, loss, wt, x, target, weight, ignore_index: int, on_error) -> bool:
        """Per sample ``loss = -w[t] * x[s, t]``, ``wt = w[t]`` (0 where t == ignore_index) for x [N, C, d...],
        target [N, d...]; a target outside [0, C) calls ``on_error`` (now, or at the next read or synchronize).
        Returns True."""

    def xent(self, loss, wt, lse, x, target, weight, ignore_index: int, on_error) -> bool:
        """Fused cross-entropy for class indices: ``loss = -w[t] * log_softmax(x)[t]``, ``wt = w[t]`` and
        ``lse = logsumexp(x)`` per sample over class dim 1; bad targets as in ``nll``. Returns True."""

    def xent_backward(self, out, x, target, wt, lse, grad, total, ignore_index: int) -> None:
        """The gradient of cross-entropy (``x`` given: ``c * (softmax(x) - onehot(t))``) or of nll_loss (``x`` None:
        ``-c * onehot(t)``) into ``out`` [N, C, d...], ``c = wt * grad`` (``/ total`` unless None), 0 if ignored."""

    def embedding(self, out, weight, idx, on_error) -> bool:
        """``out[n, :] = weight[idx[n], :]`` for contiguous 1-D ``idx`` and contiguous ``out`` [N, D]; an index outside
        [0, V) writes 0 and calls ``on_error`` as in ``nll``. Returns True."""

    def embedding_backward(self, acc, grad, idx, padding_idx: int) -> None:
        """``acc[idx[n], :] += grad[n, :]`` where ``idx[n] != padding_idx`` (-1: none), duplicates included; ``acc``
        [V, D] contiguous, zero-filled, float32 for a float16 ``grad``."""

    def moments(self, mean, var, x, dims) -> None:
        """Mean and biased variance of ``x`` over ``dims`` into contiguous ``mean`` / ``var`` (x's shape with 1 on
        ``dims``; float32 for float16 ``x``)."""

    # ---- sparse ---------------------------------------------------------------------------------------
    def spmm(self, out, rowptr, cols, vals, dense) -> None:
        """``out`` [M, N] = A @ ``dense`` [K, N] for the CSR matrix A: row r holds ``vals[k]`` at column ``cols[k]``
        for k in [rowptr[r], rowptr[r + 1]) (int32 or int64 index tensors, rowptr non-decreasing); duplicate columns
        add, columns outside [0, K) are skipped. Any strides; ``vals`` has ``dense``'s dtype. Each row sums in k
        order (deterministic), accumulating in float32 for float16 and in the dtype otherwise; bool raises
        NotImplementedError."""

    # ---- fft ------------------------------------------------------------------------------------------
    def fft_c2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """``out[b, k] = scale * sum_j x[b, j] * exp(-+2 pi i j k / n)`` (the sign + when ``inverse``; no other
        scaling) for ``x`` and ``out`` contiguous float32/float64 [..., n, 2], the last axis (re, im) pairs: a
        batched complex FFT along axis -2. ``out`` is not ``x``. Any n >= 1."""

    def fft_r2c(self, out, x, inverse: bool, scale: float = 1.0) -> None:
        """The first n/2 + 1 bins of ``fft_c2c`` of a real ``x`` (contiguous float32/float64 [..., n], n even) into
        the pairs ``out`` [..., n/2 + 1, 2]: rfft, conjugated when ``inverse``."""

    def fft_c2r(self, out, x, scale: float = 1.0) -> None:
        """``scale`` times the real inverse transform (the + sign, unnormalized) of the Hermitian half spectra ``x``
        (contiguous pairs [..., n/2 + 1, 2]) into the real ``out`` [..., n] (contiguous, n even): irfft. The imaginary
        parts of bins 0 and n/2 are ignored, as PyTorch's."""
    # ---- linalg ---------------------------------------------------------------------------------------
    def eigh(self, w, v, a, upper: bool = False) -> None:
        """Eigenvalues ``w`` [B, n] (ascending) and orthonormal eigenvectors ``v`` [B, n, n] (as columns) of the
        symmetric matrices ``a`` [B, n, n], which is overwritten. Every tensor float32/float64, contiguous, offset 0.
        Eigenvector signs are whatever the method gives (not unique); ``upper`` says which triangle the caller read
        ``a`` from (LAPACK's reduction, on cpu, then gives PyTorch's signs), and ``a`` must be symmetric anyway."""

    def svd_jacobi(self, s, v, a) -> None:
        """The SVD of ``a`` [B, m, n], m >= n, as one-sided Jacobi leaves it: ``a`` is overwritten with A V (columns
        orthogonal, of norms ``s`` [B, n], descending), ``v`` [B, n, n] gets V; so A = (A V / s) diag(s) V^T.
        Every tensor float32/float64, contiguous, offset 0."""

    def getrf_panel(self, a, piv, k: int, e: int) -> None:
        """Unblocked LU with partial pivoting (LAPACK's getf2) of columns k..e-1 of each ``a`` [B, m, c], in place:
        for each column j the first row r >= j of largest |a[r, j]| (NaN first) is swapped whole with row j,
        ``piv`` [B, kmin] int32 gets r + 1 at j, the column below is divided by the pivot (skipped when it is 0)
        and columns j+1..e-1 below row j get the rank-1 update. ``a`` float32/float64, ``a`` and ``piv``
        contiguous, offset 0."""

    def potrf_panel(self, a, k: int, e: int) -> None:
        """Unblocked lower Cholesky of the diagonal blocks ``a[:, k:e, k:e]`` of ``a`` [B, n, n] in place: column j
        is divided by the square root of its diagonal, then the block's trailing lower triangle gets the rank-1
        update (the block's strict upper triangle is scratch: callers keep the lower one). A non-PD block
        gives NaN (or inf) from the failed column on. ``a`` float32/float64, contiguous, offset 0."""

    def panels_ok(self, a) -> bool:
        """Whether the panel primitives (``getrf_panel``, ``potrf_panel``, ``trsm``) may run on ``a``'s device:
        False where a work-item's loops stop early (llvmpipe's loop limiter), where the callers keep their composed
        path instead."""

    def trsm(self, a, b, upper: bool = False, unit: bool = False) -> None:
        """Substitution: ``b`` [B, n, k] (contiguous, offset 0) is overwritten by X with A X = b, A the lower (``upper``:
        upper) triangle of ``a`` [B, n, n], read in place whatever its strides and offset (a transposed or broadcast
        view); its diagonal is taken as ones and not read when ``unit``. Float32/float64."""
