"""The short-time Fourier transform and its inverse on (re, im) pair tensors (``fft_core``'s convention): the
public ``clgrad.stft`` / ``clgrad.istft`` (``clgrad/_stft.py``) convert complex tensors at their boundary.

Composed from differentiable ops, as PyTorch does it: frames are a strided view (``unfold``) of the padded signal
times the window, then one batched FFT along the frame axis; the inverse transforms each frame back, multiplies by
the window and overlap-adds the frames with ``fold`` (col2im), dividing by the overlap-added squared window.
"""
from __future__ import annotations

from . import fft_core as core
from .creation import ones
from .padding import pad
from .resample import fold


def _window(name: str, window, win_length: int, n_fft: int, like):
    """The window zero-padded (centred) to ``n_fft``, as torch: ones when None."""
    if window is None:
        window = ones(win_length, dtype=like.dtype, device=like.device)
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    left = (n_fft - win_length) // 2
    return pad(window.to(like.dtype), (left, n_fft - win_length - left)) if win_length < n_fft else window


def _lengths(name: str, n_fft: int, hop_length, win_length):
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(x, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided=None, is_complex: bool = False):
    """torch.stft on a real signal [L] / [B, L] (or pairs [L, 2] / [B, L, 2] when ``is_complex``): pairs
    [B?, freq, frames, 2]."""
    if x.dim() - is_complex not in (1, 2):
        raise RuntimeError("stft: expected a 1D or 2D tensor")
    x = x if is_complex else core._real(x)
    batched = x.dim() - is_complex == 2
    sig = (x.movedim(-1, -2) if is_complex else x.unsqueeze(-2))  # [B?, C, L], C: 1 real or 2 (re, im)
    sig = sig if batched else sig.unsqueeze(0)
    if center:
        sig = pad(sig, (n_fft // 2, n_fft // 2), mode=pad_mode)
    length = sig.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    hop, win = _lengths("stft", n_fft, hop_length, win_length)
    frames = sig.unfold(-1, n_fft, hop) * _window("stft", window, win, n_fft, x)  # [B, C, F, n_fft]
    norm = "ortho" if normalized else "backward"
    if is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spec = core.fft(frames.movedim(1, -1), norm=norm)
    elif onesided is None or onesided:
        spec = core.rfft(frames.squeeze(1), norm=norm)
    else:
        spec = core.fft(core.stack([frames.squeeze(1), core.zeros(frames.squeeze(1).shape, dtype=x.dtype,
                                                                     device=x.device)], -1), norm=norm)
    spec = spec.transpose(1, 2)  # [B, freq, F, 2]
    return spec if batched else spec.squeeze(0)


def _overlap_add(y, hop: int, length: int):
    """Frames [B, F, n_fft] summed into [B, length], frame f starting at f * hop."""
    n_fft = y.shape[-1]
    return fold(y.transpose(1, 2), (1, length), (1, n_fft), stride=(1, hop)).reshape(y.shape[0], length)


def istft(p, n_fft: int, hop_length=None, win_length=None, window=None, center: bool = True,
          normalized: bool = False, onesided=None, length=None, return_complex: bool = False,
          window_pairs: bool = False):
    """torch.istft on pairs [B?, freq, frames, 2]: a real signal [B?, L] (pairs [B?, L, 2] if ``return_complex``).
    ``window_pairs``: ``window`` is a complex window as pairs [win_length, 2] (complex output only)."""
    core._float_dtype(p, True)
    if p.dim() not in (3, 4):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {p.dim() - 1}")
    batched = p.dim() == 4
    p = p if batched else p.unsqueeze(0)
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    freq, frames = p.shape[1], p.shape[2]
    onesided = freq != n_fft if onesided is None else onesided
    want = n_fft // 2 + 1 if onesided else n_fft
    if freq != want:
        raise RuntimeError("istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"{'n_fft / 2 + 1 when onesided=True' if onesided else 'n_fft when onesided=False'}, "
                           f"but got {freq}")
    if window_pairs:  # a complex window: frames are multiplied by it, the envelope is w**2 (complex, as torch's)
        wr, wi = (_window("istft", window.select(-1, k), win, n_fft, p) for k in (0, 1))
        w, w2 = core.stack([wr, wi], -1), core.stack([wr * wr - wi * wi, 2 * wr * wi], 0)
    else:
        w = _window("istft", window, win, n_fft, p)
        w2 = w * w
    norm = "ortho" if normalized else "backward"
    spec = p.transpose(1, 2)  # [B, F, freq, 2]
    total = n_fft + hop * (frames - 1)
    if return_complex:
        if onesided:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        y = core.ifft(spec, norm=norm)  # [B, F, n_fft, 2]
        if window_pairs:
            a, b, c, d = y.select(-1, 0), y.select(-1, 1), w.select(-1, 0), w.select(-1, 1)
            y = core.stack([a * c - b * d, a * d + b * c], -1)
        else:
            y = y * w.unsqueeze(-1)
        y = _overlap_add(y.movedim(-1, 1).reshape(-1, frames, n_fft), hop, total)
        y = y.reshape(p.shape[0], 2, total).movedim(1, -1)
    else:
        half = spec if onesided else spec.narrow(2, 0, n_fft // 2 + 1)
        y = _overlap_add(core.irfft(half, n=n_fft, norm=norm) * w, hop, total)
    parts = w2.shape[0] if window_pairs else 1
    env = _overlap_add(w2.reshape(parts, 1, n_fft).expand(parts, frames, n_fft).contiguous(), hop, total)
    env = env.movedim(0, -1) if window_pairs else env[0]  # [total, 2] pairs for a complex window
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    stop = min(end, total)
    y, env = y.narrow(1, start, max(stop - start, 0)), env.narrow(0, start, max(stop - start, 0))
    size = env.square().sum(-1).sqrt() if window_pairs else env.abs()
    if env.numel() and bool((size < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 1 (the overlap-added squared window falls below 1e-11, "
                           "so the signal cannot be recovered there)")
    if window_pairs:  # complex division by the envelope
        a, b, e, f = y.select(-1, 0), y.select(-1, 1), env.select(-1, 0), env.select(-1, 1)
        den = e * e + f * f
        y = core.stack([(a * e + b * f) / den, (b * e - a * f) / den], -1)
    else:
        y = y / (env.unsqueeze(-1) if return_complex else env)
    if end > total:
        y = core.cat([y, core.zeros((y.shape[0], end - total) + tuple(y.shape[2:]), dtype=y.dtype,
                                    device=y.device)], 1)
    return y if batched else y.squeeze(0)
