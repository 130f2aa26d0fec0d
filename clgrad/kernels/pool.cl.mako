## Pooling and interpolation over [N, C, H, W] planes (1-D ops run with H = 1), forward and backward.
##
## Inputs arrive through offset + 4 strides (any layout); outputs are contiguous. One work-item per output row
## (n, c, oh), looping along it: PoCL pays ~20 ns per work-item it cannot vectorize, so rows keep that small.
## Backward kernels are race-free gathers: one work-item owns one row (n, c, h) of the input gradient, zeroes
## it, and adds what every output whose window can reach row h sends to it. They write the accumulator type
## (the launcher casts to half afterwards).
##
## Render kwargs: name, kind, ctype ('half' | 'float' | 'double'), acc ('float' | 'double'), fp64, idx_t,
## linear (upsample kinds: bilinear rather than nearest).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  def load(ptr, i):
      return cl.module.load(ctype, ptr, i, to=acc)

  def store(ptr, i, v):
      return cl.module.store(ctype, ptr, i, v)

  strided = "IDX {p}_off, IDX {p}s0, IDX {p}s1, IDX {p}s2, IDX {p}s3"
%>\
<%def name="plane(p)">\
    const IDX n = nc / C, c = nc % C;
    const IDX ${p}_plane = ${p}_off + n * ${p}s0 + c * ${p}s1;
</%def>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

% if kind == "max_pool":
// PyTorch's scan: the first maximum of a window wins, a NaN always replaces; indices are h * W + w per plane.
__kernel void ${name}(
    __global ${ctype} *out, __global long *ind, __global const ${ctype} *x, ${strided.format(p="x")},
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, IDX DH, IDX DW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX oh = row % OH, nc = row / OH;
${plane("x")}\
<% window = context.get("window") %>\
% if window:
    // a fixed KH x KW window inside the input (no padding or dilation): unrolled, selects only
    for (IDX ow = 0; ow < OW; ++ow) {
        const IDX top = oh * SH, left = ow * SW, base = x_plane + top * xs2 + left * xs3;
        ACC best = -INFINITY;
        IDX bi = top * W + left;
%   for dh in range(window[0]):
%     for dw in range(window[1]):
        {
            const ACC v = ${load("x", f"base + {dh} * xs2 + {dw} * xs3")};
            const int take = (v > best) | (v != v);
            best = take ? v : best;
            bi = take ? (top + ${dh}) * W + left + ${dw} : bi;
        }
%     endfor
%   endfor
        ${store("out", "row * OW + ow", "best")};
        ind[row * OW + ow] = (long)bi;
    }
% else:
    IDX h0 = oh * SH - PH;
    const IDX h1 = min(h0 + (KH - 1) * DH + 1, H);
    while (h0 < 0) h0 += DH;
    for (IDX ow = 0; ow < OW; ++ow) {
        IDX w0 = ow * SW - PW;
        const IDX w1 = min(w0 + (KW - 1) * DW + 1, W);
        while (w0 < 0) w0 += DW;
        ACC best = -INFINITY;
        IDX bh = h0, bw = w0;
        for (IDX h = h0; h < h1; h += DH) {
            const IDX r = x_plane + h * xs2;
            for (IDX w = w0; w < w1; w += DW) {
                const ACC v = ${load("x", "r + w * xs3")};
                // v != v is isnan(v): PoCL calls isnan out of line, which halves this kernel's speed
                if (v > best || v != v) { best = v; bh = h; bw = w; }
            }
        }
        ${store("out", "row * OW + ow", "best")};
        ind[row * OW + ow] = (long)bh * W + bw;
    }
% endif
}
% elif kind == "max_pool_grid":
<% window = context.get("window") %>\
// A fixed KH x KW window inside the input on CPU devices: one work-item per output (ow, oh, nc) of a 3-D range and
// the window unrolled, so PoCL vectorizes across ow (the row kernel above runs each work-item's loop in scalar).
__kernel void ${name}(
    __global ${ctype} *out, __global long *ind, __global const ${ctype} *x, ${strided.format(p="x")},
    IDX C, IDX W, IDX OH, IDX OW, IDX SH, IDX SW)
{
    const IDX ow = (IDX)get_global_id(0), oh = (IDX)get_global_id(1), nc = (IDX)get_global_id(2);
${plane("x")}\
    const IDX top = oh * SH, left = ow * SW, base = x_plane + top * xs2 + left * xs3;
    ACC best = -INFINITY;
    IDX bi = top * W + left;
% for dh in range(window[0]):
%   for dw in range(window[1]):
    {
        const ACC v = ${load("x", f"base + {dh} * xs2 + {dw} * xs3")};
        const int take = (v > best) | (v != v);
        best = take ? v : best;
        bi = take ? (top + ${dh}) * W + left + ${dw} : bi;
    }
%   endfor
% endfor
    const IDX o = (nc * OH + oh) * OW + ow;
    ${store("out", "o", "best")};
    ind[o] = (long)bi;
}
% elif kind == "max_pool_bwd":
// Row h of plane nc: only outputs whose window rows can include h ([oh_lo, oh_hi]) can point into it.
__kernel void ${name}(
    __global ACC *out, __global const ${ctype} *g, ${strided.format(p="g")}, __global const long *ind, IDX ind_off,
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX SH, IDX PH, IDX DH, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX h = row % H, nc = row / H;
${plane("g")}\
    __global ACC *dst = out + row * W;
    for (IDX w = 0; w < W; ++w) dst[w] = 0;
    const IDX first = h + PH - (KH - 1) * DH;
    const IDX oh_lo = first <= 0 ? 0 : (first + SH - 1) / SH;
    const IDX oh_hi = min((h + PH) / SH + 1, OH);
    const long lo = (long)h * W, hi = lo + W;
    for (IDX oh = oh_lo; oh < oh_hi; ++oh) {
        __global const long *irow = ind + ind_off + (nc * OH + oh) * OW;
        for (IDX ow = 0; ow < OW; ++ow) {
            const long i = irow[ow];
            if (i >= lo && i < hi) dst[i - lo] += ${load("g", "g_plane + oh * gs2 + ow * gs3")};
        }
    }
}
% elif kind == "max_pool_bwd_scatter":
// Disjoint windows (kernel extent <= stride), so each input position is the maximum of at most one output: one
// work-item per output (ow, oh, nc) of a 3-D range writes its gradient there, into an out zeroed beforehand.
// PoCL vectorizes this across work-items; the row-gather kernel above runs scalar (2-3x slower on MNIST).
__kernel void ${name}(
    __global ACC *out, __global const ${ctype} *g, ${strided.format(p="g")}, __global const long *ind, IDX ind_off,
    IDX C, IDX HW, IDX OH, IDX OW)
{
    const IDX ow = (IDX)get_global_id(0), oh = (IDX)get_global_id(1), nc = (IDX)get_global_id(2);
${plane("g")}\
    const long i = ind[ind_off + (nc * OH + oh) * OW + ow];
    if (i >= 0 && i < HW) out[nc * HW + i] = ${load("g", "g_plane + oh * gs2 + ow * gs3")};
}
% elif kind == "gather":
// out[nc, o] = src[nc, ind[nc, o]] for a contiguous src: max-pool backward's adjoint (its double backward).
__kernel void ${name}(
    __global ${ctype} *out, __global const ${ctype} *src, IDX src_off, __global const long *ind, IDX ind_off,
    IDX HW, IDX OH, IDX OW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX nc = row / OH;
    for (IDX o = row * OW; o < row * OW + OW; ++o) {
        const long i = ind[ind_off + o];
        const ACC v = (i >= 0 && i < HW) ? ${load("src", "src_off + nc * HW + i")} : (ACC)0;
        ${store("out", "o", "v")};
    }
}
% elif kind in ("avg_pool", "avg_pool_bwd"):
// PyTorch's divisor: divisor_override when nonzero; else the window size counting padding (not the part of a
// ceil_mode window past the padding) when include_pad, else the in-bounds part.
inline ACC divisor_of(IDX hstart, IDX wstart, IDX H, IDX W, IDX KH, IDX KW, IDX PH, IDX PW, int include_pad, int divisor) {
    if (divisor) return (ACC)divisor;
    const IDX hend = min(hstart + KH, H + PH), wend = min(wstart + KW, W + PW);
    if (include_pad) return (ACC)((hend - hstart) * (wend - wstart));
    return (ACC)((min(hend, H) - max(hstart, (IDX)0)) * (min(wend, W) - max(wstart, (IDX)0)));
}
%   if kind == "avg_pool":
__kernel void ${name}(
    __global ${ctype} *out, __global const ${ctype} *x, ${strided.format(p="x")},
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, int include_pad,
    int divisor, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX oh = row % OH, nc = row / OH;
${plane("x")}\
    const IDX hstart = oh * SH - PH;
    const IDX hs = max(hstart, (IDX)0), he = min(hstart + KH, H);
    for (IDX ow = 0; ow < OW; ++ow) {
        const IDX wstart = ow * SW - PW;
        const IDX ws = max(wstart, (IDX)0), we = min(wstart + KW, W);
        ACC sum = 0;
        for (IDX h = hs; h < he; ++h)
            for (IDX w = ws; w < we; ++w)
                sum += ${load("x", "x_plane + h * xs2 + w * xs3")};
        ${store("out", "row * OW + ow", "sum / divisor_of(hstart, wstart, H, W, KH, KW, PH, PW, include_pad, divisor)")};
    }
}
%   else:
// Row h of plane nc gathers from the outputs whose window rows [oh*SH - PH, oh*SH - PH + KH) contain h.
__kernel void ${name}(
    __global ACC *out, __global const ${ctype} *g, ${strided.format(p="g")},
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, int include_pad,
    int divisor, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX h = row % H, nc = row / H;
${plane("g")}\
    __global ACC *dst = out + row * W;
    for (IDX w = 0; w < W; ++w) dst[w] = 0;
    const IDX first = h + PH - KH + 1;
    const IDX oh_lo = first <= 0 ? 0 : (first + SH - 1) / SH;
    const IDX oh_hi = min((h + PH) / SH + 1, OH);
    for (IDX oh = oh_lo; oh < oh_hi; ++oh) {
        const IDX hstart = oh * SH - PH;
        for (IDX ow = 0; ow < OW; ++ow) {
            const IDX wstart = ow * SW - PW;
            const ACC v = ${load("g", "g_plane + oh * gs2 + ow * gs3")}
                / divisor_of(hstart, wstart, H, W, KH, KW, PH, PW, include_pad, divisor);
            const IDX we = min(wstart + KW, W);
            for (IDX w = max(wstart, (IDX)0); w < we; ++w) dst[w] += v;
        }
    }
}
%   endif
% elif kind == "adaptive":
// Output o averages input [floor(o*in/out), ceil((o+1)*in/out)), divided by the rows then the columns as
// PyTorch does.
__kernel void ${name}(
    __global ${ctype} *out, __global const ${ctype} *x, ${strided.format(p="x")},
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX oh = row % OH, nc = row / OH;
${plane("x")}\
    const IDX hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
    for (IDX ow = 0; ow < OW; ++ow) {
        const IDX ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
        ACC sum = 0;
        for (IDX h = hs; h < he; ++h)
            for (IDX w = ws; w < we; ++w)
                sum += ${load("x", "x_plane + h * xs2 + w * xs3")};
        ${store("out", "row * OW + ow", "sum / (ACC)(he - hs) / (ACC)(we - ws)")};
    }
}
% elif kind == "adaptive_bwd":
// The outputs whose rows contain input row h are among [floor(h*OH/H), ceil((h+1)*OH/H)); each is checked.
__kernel void ${name}(
    __global ACC *out, __global const ${ctype} *g, ${strided.format(p="g")},
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX h = row % H, nc = row / H;
${plane("g")}\
    __global ACC *dst = out + row * W;
    for (IDX w = 0; w < W; ++w) dst[w] = 0;
    const IDX oh_hi = min(((h + 1) * OH + H - 1) / H, OH);
    for (IDX oh = h * OH / H; oh < oh_hi; ++oh) {
        const IDX hs = oh * H / OH, he = ((oh + 1) * H + OH - 1) / OH;
        if (h < hs || h >= he) continue;
        for (IDX ow = 0; ow < OW; ++ow) {
            const IDX ws = ow * W / OW, we = ((ow + 1) * W + OW - 1) / OW;
            const ACC v = ${load("g", "g_plane + oh * gs2 + ow * gs3")} / (ACC)(he - hs) / (ACC)(we - ws);
            for (IDX w = ws; w < we; ++w) dst[w] += v;
        }
    }
}
% elif kind in ("upsample", "upsample_bwd"):
## Tables (built on the host, see cpu_conv.Interp): ti = [i0h(OH) i1h(OH) i0w(OW) i1w(OW) r0h(H+1) r1h(H+1)],
## tl = [l0h(OH) l1h(OH) l0w(OW) l1w(OW)].
%   if kind == "upsample":
__kernel void ${name}(
    __global ${ctype} *out, __global const ${ctype} *x, ${strided.format(p="x")},
    __global const int *ti, __global const ACC *tl, IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX oh = row % OH, nc = row / OH;
${plane("x")}\
    __global const int *i0w = ti + 2 * OH, *i1w = ti + 2 * OH + OW;
    const IDX r0 = x_plane + ti[oh] * xs2;
%     if linear:
    __global const ACC *l0w = tl + 2 * OH, *l1w = tl + 2 * OH + OW;
    const IDX r1 = x_plane + ti[OH + oh] * xs2;
    const ACC lh0 = tl[oh], lh1 = tl[OH + oh];
%     endif
    for (IDX ow = 0; ow < OW; ++ow) {
%     if linear:
        const IDX a = i0w[ow] * xs3, b = i1w[ow] * xs3;
        const ACC v = lh0 * (l0w[ow] * ${load("x", "r0 + a")} + l1w[ow] * ${load("x", "r0 + b")})
                    + lh1 * (l0w[ow] * ${load("x", "r1 + a")} + l1w[ow] * ${load("x", "r1 + b")});
%     else:
        const ACC v = ${load("x", "r0 + i0w[ow] * xs3")};
%     endif
        ${store("out", "row * OW + ow", "v")};
    }
}
%   else:
// Row h of plane nc gathers from the output rows that sample it: r0h[h]..r0h[h+1] (as their first row) and
// r1h[h]..r1h[h+1] (as their second); along w, each output column scatters into this work-item's own row.
__kernel void ${name}(
    __global ACC *out, __global const ${ctype} *g, ${strided.format(p="g")},
    __global const int *ti, __global const ACC *tl, IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX h = row % H, nc = row / H;
${plane("g")}\
    __global ACC *dst = out + row * W;
    for (IDX w = 0; w < W; ++w) dst[w] = 0;
    __global const int *i0w = ti + 2 * OH, *i1w = ti + 2 * OH + OW;
    __global const int *r0h = ti + 2 * (OH + OW), *r1h = r0h + H + 1;
%     if linear:
    __global const ACC *l0w = tl + 2 * OH, *l1w = tl + 2 * OH + OW;
    for (int second = 0; second < 2; ++second) {
        __global const int *rh = second ? r1h : r0h;
        for (IDX oh = rh[h]; oh < rh[h + 1]; ++oh) {
            const ACC lh = tl[second * OH + oh];
            for (IDX ow = 0; ow < OW; ++ow) {
                const ACC v = lh * ${load("g", "g_plane + oh * gs2 + ow * gs3")};
                dst[i0w[ow]] += v * l0w[ow];
                dst[i1w[ow]] += v * l1w[ow];
            }
        }
    }
%     else:
    for (IDX oh = r0h[h]; oh < r0h[h + 1]; ++oh)
        for (IDX ow = 0; ow < OW; ++ow)
            dst[i0w[ow]] += ${load("g", "g_plane + oh * gs2 + ow * gs3")};
%     endif
}
%   endif
% endif
