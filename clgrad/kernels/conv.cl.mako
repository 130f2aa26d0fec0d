## Convolution through matmul: im2col copies each window tap of the input into a column matrix, col2im sums a
## column matrix back onto the input positions its entries came from (im2col's adjoint: the input gradient of a
## convolution and the output of a transposed one).
##
## Layouts: x / out are [N, C, H, W]; cols is [N, C*KH*KW, OH*OW] with rows ordered (c, ki, kj), of any strides
## (cs_n, cs_t, cs_l) from cols_off: contiguous for the per-image products, [taps, N, L] or [N, L, taps] for the
## batch-folded ones (ops/conv_fold.py).
## Window tap (ki, kj) of output (oh, ow) reads input (oh*SH - PH + ki*DH, ow*SW - PW + kj*DW); padding is zero.
##
## One work-item per row (im2col: per block of RB rows), looping along it: PoCL pays ~20 ns per work-item that it
## cannot vectorize, so rows (not elements) keep that cost and the index divisions off the per-element path.
## On CPU devices 'im2col_grid' and 'col2im_grid' take rows of at least 4 positions and windows of at most 64 taps
## instead (backends/opencl/conv.py says which): a work-item per position of a 3-D range with the taps unrolled,
## which PoCL vectorizes across the row (7-11x faster im2col, 2.7x faster col2im on MNIST's shapes).
##
## 'bias' adds a per-channel bias to a contiguous [N, C, L] output, one work-item per (n, c) row.
##
## Render kwargs: name, kind ('im2col' | 'col2im' | 'im2col_grid' | 'col2im_grid' | 'bias'), ctype (storage type:
## im2col copies the bits, so 'ushort', 'uint' or 'ulong' of the element's width; col2im: 'half', 'float' or
## 'double'), acc (col2im's output and accumulator type: 'float' or 'double'; bias: the compute type), fp64, idx_t;
## window (the grid kernels' compile-time geometry: im2col_grid (KH, KW, SW, padded, unit position stride),
## col2im_grid (KH, KW)).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  def load(ptr, i):
      return cl.module.load(ctype, ptr, i, to=acc)

  def store(ptr, i, v):
      return cl.module.store(ctype, ptr, i, v)
%>\
${cl.header(fp64, idx_t)}\

// [*lo, *hi): the positions o in [0, n) whose coordinate start + o * step lies in [0, size) (step > 0)
inline void inside(IDX start, IDX step, IDX size, IDX n, IDX *lo, IDX *hi) {
    IDX a = start >= 0 ? 0 : (-start + step - 1) / step;
    IDX b = start >= size ? 0 : (size - start + step - 1) / step;
    *lo = min(a, n);
    *hi = max(*lo, min(b, n));
}

% if kind == "im2col":
// Work-item r = (g * C*KH*KW + tap) * NB + b copies output rows [b*RB, b*RB + RB) of tap = (c*KH + ki)*KW + kj for
// images [g*NN, g*NN + NN). On CPUs blocks of rows and of images amortise the work-item cost (a deep layer's
// 1x1 positions made one work-item per element: 1.8 ms for 147K elements on PoCL); on GPUs RB = NN = 1 gives
// enough work-items.
__kernel void ${name}(
    __global ${ctype} *cols, IDX cols_off, IDX cs_n, IDX cs_t, IDX cs_l,
    __global const ${ctype} *x, IDX x_off, IDX xs0, IDX xs1, IDX xs2, IDX xs3,
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, IDX DH, IDX DW, IDX RB,
    IDX N, IDX NN, IDX items)
{
    if (get_global_id(0) >= (size_t)items) return;
    IDX r = (IDX)get_global_id(0);
    const IDX NB = (OH + RB - 1) / RB;
    const IDX block = r % NB; r /= NB;
    const IDX kj = r % KW; r /= KW;
    const IDX ki = r % KH; r /= KH;
    const IDX c = r % C, g = r / C;
    const IDX w0 = kj * DW - PW;
    IDX lo, hi;
    inside(w0, SW, W, OW, &lo, &hi);
    const IDX oh_end = min(block * RB + RB, OH), n_end = min(g * NN + NN, N);
    for (IDX n = g * NN; n < n_end; ++n) {
    const IDX base = x_off + n * xs0 + c * xs1;
    const IDX row0 = cols_off + n * cs_n + ((c * KH + ki) * KW + kj) * cs_t;
    for (IDX oh = block * RB; oh < oh_end; ++oh) {
        __global ${ctype} *dst = cols + (row0 + oh * OW * cs_l);
        const IDX h = oh * SH - PH + ki * DH;
        if (cs_l == 1) {
            if (h < 0 || h >= H) {
                for (IDX ow = 0; ow < OW; ++ow) dst[ow] = 0;
                continue;
            }
            for (IDX ow = 0; ow < lo; ++ow) dst[ow] = 0;
            if (SW * xs3 == 1) {  // a plain copy, which the compiler vectorizes (2x faster on PoCL)
                __global const ${ctype} *src = x + (base + h * xs2 + w0 + lo);
                for (IDX i = 0; i < hi - lo; ++i) dst[lo + i] = src[i];
            } else {
                for (IDX ow = lo; ow < hi; ++ow) dst[ow] = x[base + h * xs2 + (w0 + ow * SW) * xs3];
            }
            for (IDX ow = hi; ow < OW; ++ow) dst[ow] = 0;
        } else {  // positions cs_l apart ([N, L, taps] columns)
            const int in_h = h >= 0 && h < H;
            for (IDX ow = 0; ow < OW; ++ow)
                dst[ow * cs_l] = in_h && ow >= lo && ow < hi ? x[base + h * xs2 + (w0 + ow * SW) * xs3] : 0;
        }
    }
    }
}
% elif kind == "im2col_grid":
<% kh, kw, sw, padded, unit = context.get("window") %>\
// CPU devices, windows of at most 64 taps: one work-item per output position (ow, oh) of plane nc = n*C + c of a
// 3-D range, writing its ${kh}x${kw} taps (unrolled) of a cols with ${"unit stride" if unit else "a stride cs_l"} along
// positions, from an x with unit stride along W. PoCL vectorizes across ow; with the window stride ${sw} a
// compile-time constant the loads (and, for a unit position stride, the stores) along ow are vector ones (MNIST's
// im2col of 64 x 10 x 12 x 12, k5: 800 -> 70 us on PoCL, AMD EPYC).
__kernel void ${name}(
    __global ${ctype} *cols, IDX cols_off, IDX cs_n, IDX cs_t, IDX cs_l, __global const ${ctype} *x, IDX x_off,
    IDX xs0, IDX xs1, IDX xs2, IDX C, IDX H, IDX W, IDX OW, IDX SH, IDX PH, IDX PW, IDX DH, IDX DW)
{
    const IDX ow = (IDX)get_global_id(0), oh = (IDX)get_global_id(1), nc = (IDX)get_global_id(2);
    const IDX n = nc / C, c = nc - n * C;
    const IDX h0 = oh * SH - PH, w0 = ow * ${sw} - PW;
    __global const ${ctype} *src = x + (x_off + n * xs0 + c * xs1 + h0 * xs2 + w0);
    __global ${ctype} *dst = cols + (cols_off + n * cs_n + c * ${kh * kw} * cs_t + (oh * OW + ow)${"" if unit else " * cs_l"});
% for ki in range(kh):
%   for kj in range(kw):
%     if padded:
    {
        const IDX h = h0 + ${ki} * DH, w = w0 + ${kj} * DW;
        ${ctype} v = 0;
        if ((h >= 0) & (h < H) & (w >= 0) & (w < W)) v = src[${ki} * DH * xs2 + ${kj} * DW];
        dst[${ki * kw + kj} * cs_t] = v;
    }
%     else:
    dst[${ki * kw + kj} * cs_t] = src[${ki} * DH * xs2 + ${kj} * DW];
%     endif
%   endfor
% endfor
}
% elif kind == "col2im_grid":
<% kh, kw = context.get("window") %>\
// CPU devices, stride-1 windows of at most 64 taps: one work-item per element (w, h) of plane nc of the
// (contiguous) output of a 3-D range, summing the column entries of its ${kh}x${kw} taps (unrolled; a tap's entry
// exists where its output position lies inside [OH, OW]): PoCL vectorizes across w with masked vector loads
// (MNIST's col2im onto 64 x 10 x 12 x 12, k5: 720 -> 270 us on PoCL, AMD EPYC).
__kernel void ${name}(
    __global ${acc} *out, __global const ${ctype} *cols, IDX cols_off, IDX cs_n, IDX cs_t,
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX PH, IDX PW, IDX DH, IDX DW)
{
    const IDX w = (IDX)get_global_id(0), h = (IDX)get_global_id(1), nc = (IDX)get_global_id(2);
    const IDX n = nc / C, c = nc - n * C;
    const IDX base = cols_off + n * cs_n + c * ${kh * kw} * cs_t;
    ${acc} sum = 0;
% for ki in range(kh):
%   for kj in range(kw):
    {
        const IDX oh = h + PH - ${ki} * DH, ow = w + PW - ${kj} * DW;
        if ((oh >= 0) & (oh < OH) & (ow >= 0) & (ow < OW)) sum += ${load("cols", f"base + {ki * kw + kj} * cs_t + oh * OW + ow")};
    }
%   endfor
% endfor
    out[(nc * H + h) * W + w] = sum;
}
% elif kind == "col2im":
// row r = (n*C + c)*H + h of out, W entries long: out is zeroed, then every (ki, kj) tap whose output row
// reads input row h adds its column entries. Only this work-item writes the row, so there are no races.
__kernel void ${name}(
    __global ${acc} *out, __global const ${ctype} *cols, IDX cols_off, IDX cs_n, IDX cs_t, IDX cs_l,
    IDX C, IDX H, IDX W, IDX OH, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, IDX DH, IDX DW, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const IDX h = row % H, nc = row / H, n = nc / C, c = nc % C;
    __global ${acc} *dst = out + row * W;
    for (IDX w = 0; w < W; ++w) dst[w] = 0;
    for (IDX ki = 0; ki < KH; ++ki) {
        const IDX t = h + PH - ki * DH;
        if (t < 0) break;  // t only falls as ki grows
        if (t % SH != 0 || t / SH >= OH) continue;
        const IDX oh = t / SH;
        for (IDX kj = 0; kj < KW; ++kj) {
            const IDX w0 = kj * DW - PW;
            IDX lo, hi;
            inside(w0, SW, W, OW, &lo, &hi);
            const IDX src = cols_off + n * cs_n + ((c * KH + ki) * KW + kj) * cs_t + oh * OW * cs_l;
            if (SW == 1 && cs_l == 1) {  // contiguous: the compiler vectorizes it
                __global ${acc} *d = dst + (w0 + lo);
                for (IDX i = 0; i < hi - lo; ++i) d[i] += ${load("cols", "src + lo + i")};
            } else {
                for (IDX ow = lo; ow < hi; ++ow) dst[w0 + ow * SW] += ${load("cols", "src + ow * cs_l")};
            }
        }
    }
}
% elif kind == "bias":
__kernel void ${name}(__global ${ctype} *out, __global const ${ctype} *b, IDX b_off, IDX bs, IDX C, IDX L, IDX rows)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX row = (IDX)get_global_id(0);
    const ${acc} v = ${load("b", "b_off + (row % C) * bs")};
    for (IDX i = row * L; i < row * L + L; ++i) ${store("out", "i", load("out", "i") + " + v")};
}
% endif
