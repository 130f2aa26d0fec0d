## Batched complex FFT along the last axis of a buffer of (re, im) pairs: B rows of n complex values, each stored
## as two consecutive ${ctype}. Every buffer argument comes with its offset in elements (so a pair may start at
## an odd element). Four kinds:
##   pass   one radix-R pass of a mixed-radix Stockham FFT (decimation in time, out of place, autosorting): work-item
##          (b, j) loads the R values j + r*n/R of row b, multiplies them by the twiddles w^(r*k) (k = j mod ns, ns
##          the product of the earlier radices; w from the table ``tw`` of exp(-2 pi i m / n), m < n, conjugated
##          when sgn = -1), takes their R-point DFT and stores it at (j / ns) * ns * R + k + q * ns. The last pass
##          multiplies by ``scale``.
##   local  every pass of one row in local memory, one work-group per row (rows that fit in local memory)
##   chirp  Bluestein's first step: a[b, m] = x[b, m] * c[m] for m < n, 0 up to M (the power-of-two length)
##   mul    a[b, m] *= f[m] (the transformed chirp filter, with 1/M folded in), in place
##   post   out[b, k] = scale * c[k] * y[b, k] for k < n
##   rpost  rfft's bins from a half-length complex transform (fft_r2c)
##   cpre   irfft's half-length complex input (fft_c2r)
<%namespace name="cl" file="prelude.cl.mako"/>\
<%!
import math


def lit(v, ctype):
    return f"{v:.17g}" if ctype == "double" else f"{v:.9g}f"


def twiddle(r, q, R):
    """cos and sin of -2 pi r q / R, snapped to exact 0 and +-1."""
    a = -2.0 * math.pi * ((r * q) % R) / R
    c, s = math.cos(a), math.sin(a)
    snap = lambda v: 0.0 if abs(v) < 1e-15 else (round(v) if abs(abs(v) - 1) < 1e-15 else v)  # noqa: E731
    return snap(c), snap(s)


def term(coef, var, ctype):
    if coef == 0:
        return None
    if coef == 1:
        return f"+{var}"
    if coef == -1:
        return f"-{var}"
    return f"+{lit(coef, ctype)}*{var}"


def dft(R, ctype):
    """The statements of an R-point DFT of v0..v{R-1} into y0..y{R-1}: y.x = sum(c v.x) - sgn sum(s v.y) and
    y.y = sum(c v.y) + sgn sum(s v.x)."""
    lines = []
    for q in range(R):
        cre, cim, sre, sim = [], [], [], []
        for r in range(R):
            c, s = twiddle(r, q, R)
            for out, coef, var in ((cre, c, f"v{r}.x"), (cim, c, f"v{r}.y"), (sre, s, f"v{r}.y"),
                                   (sim, s, f"v{r}.x")):
                t = term(coef, var, ctype)
                if t:
                    out.append(t)
        zero = lit(0.0, ctype)
        re = "".join(cre) or zero
        im = "".join(cim) or zero
        if sre:
            re += f" - sgn*({''.join(sre)})"
        if sim:
            im += f" + sgn*({''.join(sim)})"
        lines.append(f"const T2 y{q} = (T2)({re}, {im});")
    return lines


def butterfly(R, ctype, load, store):
    """One radix-R butterfly of work-item j (k, m, ns, tstride, tw and sgn in scope): ``load(r)`` is the C
    expression of input r, ``store(q, value)`` the statement storing output q."""
    lines = [f"T2 v{r} = {load(r)};" for r in range(R)]
    for r in range(1, R):
        lines.append(f"{{ T2 w = LD(tw, 0, {r} * k * tstride); w.y *= sgn; v{r} = cmul(v{r}, w); }}")
    return lines + dft(R, ctype) + [store(q, f"y{q}") for q in range(R)]
%>\
${cl.header(fp64, idx_t)}\
#define T ${ctype}
#define T2 ${ctype}2
#define LD(buf, off, i) ((T2)((buf)[(off) + 2 * (i)], (buf)[(off) + 2 * (i) + 1]))
#define ST(buf, off, i, v) do { const T2 v_ = (v); (buf)[(off) + 2 * (i)] = v_.x; (buf)[(off) + 2 * (i) + 1] = v_.y; } while (0)

inline T2 cmul(const T2 a, const T2 b) { return (T2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

% if kind == "pass":
__kernel void ${name}(__global const T *src, IDX src_off, __global T *dst, IDX dst_off,
                      __global const T *tw, IDX n, IDX ns, IDX tstride, IDX total, T sgn, T scale)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    const IDX m = n / ${radix};
    const IDX b = g / m, j = g - b * m;
    const IDX k = j % ns;
    const IDX row = b * n;
    const IDX base = row + (j / ns) * ns * ${radix} + k;
% for line in butterfly(radix, ctype, lambda r: f"LD(src, src_off, row + j + {r} * m)", lambda q, v: f"ST(dst, dst_off, base + {q} * ns, {v} * scale);"):
    ${line}
% endfor
}
% elif kind == "local":
## the whole transform of one row per work-group, every pass in local memory (A -> B, then swap): one launch and
## one trip through global memory instead of one per pass. ``code`` holds the radices, 3 bits each, first pass lowest.
__kernel void ${name}(__global const T *src, IDX src_off, __global T *dst, IDX dst_off, __global const T *tw,
                      IDX n, uint code, int npass, T sgn, T scale, __local T2 *buf)
{
    const IDX row = get_group_id(0) * n;
    const IDX lid = get_local_id(0), lsz = get_local_size(0);
    __local T2 *A = buf, *B = buf + n;
    for (IDX i = lid; i < n; i += lsz) A[i] = LD(src, src_off, row + i);
    barrier(CLK_LOCAL_MEM_FENCE);
% if passes:
## radices known when rendered (``passes``, for the long lengths): constant trip counts and divisors, no switch
<% ns = 1 %>\
% for R in passes:
    for (IDX j = lid; j < ${length // R}; j += lsz) {
        const IDX m = ${length // R}, tstride = ${length // (ns * R)}, ns = ${ns};
        const IDX k = j % ns;
        const IDX base = (j / ns) * ${ns * R} + k;
% for line in butterfly(R, ctype, lambda r: f"A[j + {r} * m]", lambda q, v: f"B[base + {q} * ns] = {v};"):
        ${line}
% endfor
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    { __local T2 *t = A; A = B; B = t; }
<% ns *= R %>\
% endfor
% else:
    IDX ns = 1;
    // A and B swap as offsets into buf
    IDX ia = 0, ib = n;
    for (int p = 0; p < npass; ++p) {
        const int R = (int)((code >> (3 * p)) & 7);
        const IDX m = n / R, tstride = n / (ns * R);
        for (IDX j = lid; j < m; j += lsz) {
            const IDX k = j % ns;
            const IDX base = (j / ns) * ns * R + k;
% for R in (2, 3, 4, 5, 7):
            ${"if" if R == 2 else "else if"} (R == ${R}) {
% for line in butterfly(R, ctype, lambda r: f"buf[ia + j + {r} * m]", lambda q, v: f"buf[ib + base + {q} * ns] = {v};"):
                ${line}
% endfor
            }
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const IDX t = ia;
        ia = ib;
        ib = t;
        ns *= R;
    }
    A = buf + ia;
% endif
    for (IDX i = lid; i < n; i += lsz) ST(dst, dst_off, row + i, A[i] * scale);
}
% elif kind == "chirp":
__kernel void ${name}(__global const T *x, IDX x_off, __global T *a, __global const T *c, IDX n, IDX M, IDX total)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    const IDX b = g / M, m = g - b * M;
    const T2 v = m < n ? cmul(LD(x, x_off, b * n + m), LD(c, 0, m)) : (T2)(0, 0);
    ST(a, 0, g, v);
}
% elif kind == "mul":
__kernel void ${name}(__global T *a, __global const T *f, IDX M, IDX total)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    ST(a, 0, g, cmul(LD(a, 0, g), LD(f, 0, g % M)));
}
% elif kind == "post":
__kernel void ${name}(__global const T *y, __global T *out, IDX out_off, __global const T *c, IDX n, IDX M,
                      IDX total, T scale)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    const IDX b = g / n, k = g - b * n;
    ST(out, out_off, g, cmul(LD(y, 0, b * M + k), LD(c, 0, k)) * scale);
}
% elif kind == "rpost":
## rfft from the half-length transform Z of z_j = x_2j + i x_2j+1: X_k = E_k + w^k O_k, E = (Z_k + conj Z_h-k) / 2,
## O = (Z_k - conj Z_h-k) / 2i, w = exp(-2 pi i / n) (the table ``rw``, k <= h); conjugated when sgn = -1
__kernel void ${name}(__global const T *z, __global T *out, IDX out_off, __global const T *rw, IDX h, IDX total,
                      T sgn, T scale)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    const IDX b = g / (h + 1), k = g - b * (h + 1);
    const T2 zk = LD(z, 0, b * h + (k == h ? 0 : k));
    T2 zr = LD(z, 0, b * h + (k == 0 ? 0 : h - k));
    zr.y = -zr.y;
    const T2 e = (zk + zr) * (T)0.5, d = (zk - zr) * (T)0.5;
    T2 x = e + cmul(LD(rw, 0, k), (T2)(d.y, -d.x));
    x.y *= sgn;
    ST(out, out_off, g, x * scale);
}
% elif kind == "cpre":
## irfft's half-length input: Z_k = E_k + i O_k from the half spectrum X (h + 1 bins), E = (X_k + conj X_h-k) / 2,
## O = (X_k - conj X_h-k) conj(w^k) / 2 (imaginary parts of X_0 and X_h dropped); its inverse transform is the
## real output read as pairs
__kernel void ${name}(__global const T *x, IDX x_off, __global T *z, __global const T *rw, IDX h, IDX total)
{
    const IDX g = get_global_id(0);
    if (g >= total) return;
    const IDX b = g / h, k = g - b * h;
    T2 xk = LD(x, x_off, b * (h + 1) + k), xr = LD(x, x_off, b * (h + 1) + h - k);
    if (k == 0) { xk.y = 0; xr.y = 0; }
    xr.y = -xr.y;
    T2 w = LD(rw, 0, k);
    w.y = -w.y;
    const T2 e = (xk + xr) * (T)0.5, o = cmul(xk - xr, w) * (T)0.5;
    ST(z, 0, g, ((T2)(e.x - o.y, e.y + o.x)));
}
% endif
