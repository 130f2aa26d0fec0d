## Implicit-GEMM convolution: matmul.cl.mako's register-tiled product whose B operand is im2col(x), read through
## the im2col index map while the B tile is staged in local memory, so the column matrix is never materialized.
##
## x is [NB, G*C, H, W] of any strides; column (c, ki, kj) x position (oh, ow) of image b, group g is
## x[b, g*C + c, oh*SH - PH + ki*DH, ow*SW - PW + kj*DW], zero outside x. T = C*KH*KW taps, L = OH*OW positions.
##
## Two products, a run-time choice (uniform over the launch), so one kernel (one PoCL code generation) serves both:
##  mode 0, forward:       out[z] [M, L] = a[g] [M, T] @ im2col(x[b], g), z = b*G + g (out is [NB, G*M, OH, OW]);
##                         the store adds bias[g*M + m] when bias is not NULL, then max(0, .) when relu is set.
##  mode 1, weight grad:   out[z] [M, T] = sum over the images b of chunk z ([z*per, z*per + per) clipped to NB) of
##                         a[b] [M, L] @ im2col(x[b])^T (G = 1; a is the output gradient).
## a is [*, M, K] with unit stride along K (a_sz: its stride per group (mode 0) or image (mode 1)).
##
## Per k slab, each work-item copies whole lines of the B tile (one tap, consecutive positions), walking them output
## row by output row: one division per line, then per run a bounds split and a plain copy (vectorized when x rows
## are contiguous and the stride is 1), as im2col's kernel copies; the A tile is copied row by row.
##
## Render kwargs: name, ctype, acc, fp64, idx_t, tm, tn, tk, wm, wn, vw (a matmul Tiling).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  lx, ly = tn // (wn * vw), tm // wm
  nt = lx * ly
  half = ctype == "half"
  pad = 1 if vw == 1 else 0

  def vt(w):
      return acc if w == 1 else f"{acc}{w}"

  def gload(ptr, idx):
      return cl.module.load(ctype, ptr, idx, to=acc)

  def gload8(ptr, idx):
      """8 consecutive elements of global ptr from element idx, as acc8."""
      if half:
          return f"vload_half8(0, {ptr} + {idx})"
      if ctype == "bfloat16":
          return f"as_float8(convert_uint8(vload8(0, {ptr} + {idx})) << 16)"
      raw = f"vload8(0, {ptr} + {idx})"
      return raw if ctype == acc else f"convert_{acc}8({raw})"
%>\
${cl.header(fp64, idx_t)}\

// [*lo, *hi): the positions o in [0, n) whose coordinate start + o * step lies in [0, size) (step > 0)
inline void inside(IDX start, IDX step, IDX size, IDX n, IDX *lo, IDX *hi) {
    // stride 1 (most convolutions) needs no division: this runs once per copied run of every B tile
    IDX a = start >= 0 ? 0 : (step == 1 ? -start : (-start + step - 1) / step);
    IDX b = start >= size ? 0 : (step == 1 ? size - start : (size - start + step - 1) / step);
    *lo = min(a, n);
    *hi = max(*lo, min(b, n));
}

// dst[j * ds] = im2col(x) at one tap and positions p .. p + len - 1 (zero past L and from j = valid on), walking
// the positions row by row so that each run along an output row is a bounds split and a plain copy
inline void copy_line(__local ${acc} *dst, int ds, int valid, int len, __global const ${ctype} *x, IDX base, IDX p,
                      IDX L, IDX OW, IDX H, IDX W, IDX xs2, IDX xs3, IDX SH, IDX SW, IDX hoff, IDX woff)
{
    IDX oh = p / OW, ow = p - oh * OW;
    int i = 0;
    if (valid > L - p) valid = (int)max(L - p, (IDX)0);
    while (i < valid) {
        const int run = (int)min((IDX)(valid - i), OW - ow);
        const IDX h = oh * SH + hoff, w0 = ow * SW + woff;
        IDX lo = 0, hi = 0;
        if (h >= 0 && h < H) inside(w0, SW, W, run, &lo, &hi);
        __global const ${ctype} *src = x + (base + h * xs2 + w0 * xs3);
        __local ${acc} *d = dst + i * ds;
        for (int j = 0; j < lo; ++j) d[j * ds] = 0;
        if (ds == 1 && SW * xs3 == 1) {  // contiguous: 8-wide vector copies, then the tail
            int j = lo;
            for (; j + 8 <= hi; j += 8) vstore8(${gload8("src", "j")}, 0, d + j);
            for (; j < hi; ++j) d[j] = ${gload("src", "j")};
        } else {
            for (int j = lo; j < hi; ++j) d[j * ds] = ${gload("src", "j * SW * xs3")};
        }
        for (int j = hi; j < run; ++j) d[j * ds] = 0;
        i += run;
        ow = 0;
        ++oh;
    }
    for (; i < len; ++i) dst[i * ds] = 0;
}

__kernel __attribute__((reqd_work_group_size(${lx}, ${ly}, 1)))
void ${name}(
    __global ${ctype} *out, IDX out_off,
    __global const ${ctype} *a, IDX a_off, IDX a_sz, IDX a_sm,
    __global const ${ctype} *x, IDX x_off, IDX xs0, IDX xs1, IDX xs2, IDX xs3,
    IDX C, IDX H, IDX W, IDX OW, IDX KH, IDX KW, IDX SH, IDX SW, IDX PH, IDX PW, IDX DH, IDX DW,
    IDX M, IDX N, IDX K, IDX NB, IDX G, IDX per, int mode, int relu, __global const ${ctype} *bias, IDX bias_off)
{
    __local ${acc} As[${tm}][${tk + pad}];
    __local ${acc} Bs[${tk}][${tn + pad}];
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * ${lx} + tx;
    const IDX m0 = (IDX)get_group_id(1) * ${tm}, n0 = (IDX)get_group_id(0) * ${tn};
    const IDX z = get_global_id(2);
    const IDX T = C * KH * KW, L = mode ? K : N;
% for i in range(wm):
    ${vt(vw)} ${", ".join(f"acc{i}_{j} = 0" for j in range(wn))};
% endfor

    const IDX b_first = mode ? z * per : z / G, b_end = mode ? min(z * per + per, NB) : b_first + 1;
    const IDX g = mode ? 0 : z % G;
    for (IDX bb = b_first; bb < b_end; ++bb) {
    const IDX a_base = a_off + (mode ? bb : g) * a_sz;
    const IDX x_base = x_off + bb * xs0 + g * C * xs1;
    for (IDX k0 = 0; k0 < K; k0 += ${tk}) {
        // the A tile: rows along its unit-stride K
        for (int mm = tid; mm < ${tm}; mm += ${nt}) {
            __global const ${ctype} *src = a + (a_base + (m0 + mm) * a_sm + k0);
            const int kn = m0 + mm < M ? (int)min((IDX)${tk}, K - k0) : 0;
            for (int kk = 0; kk < kn; ++kk) As[mm][kk] = ${gload("src", "kk")};
            for (int kk = kn; kk < ${tk}; ++kk) As[mm][kk] = 0;
        }
        // the B tile through the im2col map: one tap's line of positions at a time (mode 0: rows of Bs, mode 1:
        // its columns)
        const int lines = mode ? ${tn} : ${tk}, len = mode ? ${tk} : ${tn}, ds = mode ? ${tn + pad} : 1;
        const IDX p0 = mode ? k0 : n0, t0 = mode ? n0 : k0;
        for (int i = tid; i < lines; i += ${nt}) {
            const IDX t = t0 + i;
            const IDX kj = t % KW, r = t / KW;
            __local ${acc} *dst = mode ? &Bs[0][i] : &Bs[i][0];
            copy_line(dst, ds, t < T ? len : 0, len, x, x_base + (r / KH) * xs1, p0, L, OW, H, W, xs2, xs3, SH, SW,
                      (r % KH) * DH - PH, kj * DW - PW);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < ${tk}; ++kk) {
% for j in range(wn):
%   if vw == 1:
            const ${acc} b${j} = Bs[kk][tx + ${lx * j}];
%   else:
            const ${vt(vw)} b${j} = vload${vw}(0, &Bs[kk][(tx + ${lx * j}) * ${vw}]);
%   endif
% endfor
% for i in range(wm):
            {
                const ${acc} av = As[ty + ${ly * i}][kk];
%   for j in range(wn):
                acc${i}_${j} += av * b${j};
%   endfor
            }
% endfor
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    }

    const IDX o_base = out_off + z * M * N;
% for i in range(wm):
    {
        const IDX m = m0 + ty + ${ly * i};
        if (m < M) {
            const ${acc} bv = bias ? ${gload("bias", "bias_off + g * M + m")} : (${acc})0;
%   for j in range(wn):
            {
                const IDX n = n0 + (tx + ${lx * j}) * ${vw};
                const IDX o = o_base + m * N + n;
                ${vt(vw)} v = acc${i}_${j} + bv;
                if (relu) v = fmax(v, (${acc})0);
%     if vw > 1:
                if (n + ${vw} <= N) {
%       if half:
                    vstore_half${vw}_rte(v, 0, out + o);
%       elif ctype == acc:
                    vstore${vw}(v, 0, out + o);
%       else:
                    vstore${vw}(convert_${ctype}${vw}(v), 0, out + o);
%       endif
                } else {
                    ${acc} part[${vw}];
                    vstore${vw}(v, 0, part);
                    for (int t = 0; t < ${vw} && n + t < N; ++t) ${cl.module.store(ctype, "out", "o + t", "part[t]")};
                }
%     else:
                if (n < N) ${cl.module.store(ctype, "out", "o", "v")};
%     endif
            }
%   endfor
        }
    }
% endfor
}
