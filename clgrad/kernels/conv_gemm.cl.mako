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
## Per k slab, the positions and taps the B tile covers are decoded once into local tables (row offsets, window
## starts), so each B element costs two adds, a bounds check and a load; positions past L and taps past T get a
## start far below 0, which the bounds check rejects.
##
## Render kwargs: name, ctype, acc, fp64, idx_t, tm, tn, tk, wm, wn, vw (a matmul Tiling).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  lx, ly = tn // (wn * vw), tm // wm
  nt = lx * ly
  half = ctype == "half"
  pad = 1 if vw == 1 else 0
  nd = max(tk, tn)  # entries of the decode tables

  def vt(w):
      return acc if w == 1 else f"{acc}{w}"

  def gload(ptr, idx):
      return cl.module.load(ctype, ptr, idx, to=acc)
%>\
${cl.header(fp64, idx_t)}\
#define FAR (-(1 << 28))

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
    __local int pos_h[${nd}], pos_w[${nd}], tap_h[${nd}], tap_w[${nd}];
    __local IDX tap_c[${nd}];
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
        // the decode tables: positions along n (mode 0) or k (mode 1), taps along the other
        const IDX p0 = mode ? k0 : n0, t0 = mode ? n0 : k0;
        const int np = mode ? ${tk} : ${tn}, ntp = mode ? ${tn} : ${tk};
        for (int i = tid; i < np; i += ${nt}) {
            const IDX p = p0 + i;
            pos_h[i] = p < L ? (int)((p / OW) * SH - PH) : FAR;
            pos_w[i] = p < L ? (int)((p % OW) * SW - PW) : FAR;
        }
        for (int i = tid; i < ntp; i += ${nt}) {
            const IDX t = t0 + i;
            const IDX kj = t % KW, r = t / KW;
            tap_c[i] = (r / KH) * xs1;
            tap_h[i] = t < T ? (int)((r % KH) * DH) : FAR;
            tap_w[i] = (int)(kj * DW);
        }
        // the A tile, along its unit-stride K
        for (int r = 0; r < ${-(-tm * tk // nt)}; ++r) {
            const int e = tid + r * ${nt};
%   if (tm * tk) % nt:
            if (e >= ${tm * tk}) break;
%   endif
            const int kk = e % ${tk}, mm = e / ${tk};
            As[mm][kk] = (m0 + mm < M && k0 + kk < K) ? ${gload("a", f"a_base + (m0 + mm) * a_sm + k0 + kk")} : (${acc})0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // the B tile through the im2col map
        for (int r = 0; r < ${-(-tk * tn // nt)}; ++r) {
            const int e = tid + r * ${nt};
%   if (tk * tn) % nt:
            if (e >= ${tk * tn}) break;
%   endif
            const int nn = e % ${tn}, kk = e / ${tn};
            const int pi = mode ? kk : nn, ti = mode ? nn : kk;
            const int h = pos_h[pi] + tap_h[ti], w = pos_w[pi] + tap_w[ti];
            Bs[kk][nn] = (h >= 0 && h < H && w >= 0 && w < W)
                ? ${gload("x", "x_base + tap_c[ti] + h * xs2 + w * xs3")} : (${acc})0;
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
