## Batched matrix product: out[b] = a[b] @ b[b] for a [B, M, K] and b [B, K, N] of any strides (batch
## stride 0 broadcasts), out contiguous [B, M, N]. Batch is the 3rd global dimension.
##
## A work-group of (lx, ly) work-items computes one tm x tn tile of out. Work-item (tx, ty) keeps a wm x wn
## block of vw-wide vectors in registers: rows ty + ly*i, columns (tx + lx*j)*vw .. +vw. GPUs want vw = 1
## (neighbouring work-items then read neighbouring local words); CPUs want vw = the SIMD width.
##
## The k loop stages tk-deep slabs in __local memory, As[m][k] and Bs[k][n]. Each operand is copied along
## its unit-stride dim, vw elements at a time, or gathered when it has none; which of the three copies runs
## is decided at run time from the strides (a branch uniform over the launch), so one kernel serves every
## layout. Tiles wholly inside the matrices skip bounds checks; edge tiles check each chunk and copy those
## crossing the edge element by element, zero-filled past M, N and K, so any size works and K == 0 leaves
## the zeros the accumulators start with.
##
## out[z] = sum of a[b] @ b[b] over the batches b of chunk z ([z*per, z*per + per) clipped to NB): the batch loop
## wraps the k loop, so the accumulators stay in registers (a convolution's weight gradient, which would otherwise
## write and then reduce one product per sample); a plain product has per = 1.
## With ``bias`` (float and double) the kernel takes a bias pointer: when it is not NULL, bias[n] is added to
## every row in the store (linear's bias). Both are run-time choices so that one kernel serves all four uses:
## on PoCL each kernel costs 1-3 s of code generation on first use.
##
## Render kwargs: name, ctype (storage type), acc (accumulator type), fp64, idx_t, tm, tn, tk, wm, wn, vw, bias,
## nt_blocks (optional: b's tiles read along k transposed in registers).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  lx, ly = tn // (wn * vw), tm // wm
  nt = lx * ly
  half = ctype == "half"
  short = ctype in ("half", "bfloat16")  # 16-bit floats: stored element by element through the prelude's store
  # With vw == 1 (GPUs) a padding column keeps strided local accesses off a single memory bank.
  pad = 1 if vw == 1 else 0

  def vt(w):
      return acc if w == 1 else f"{acc}{w}"

  def gload(ptr, idx, w):
      """w consecutive elements of global ptr from element idx, converted to the accumulator type."""
      if w == 1:
          return cl.module.load(ctype, ptr, idx, to=acc)
      if half:
          return f"vload_half{w}(0, {ptr} + {idx})"
      if ctype == "bfloat16":
          return f"as_float{w}(convert_uint{w}(vload{w}(0, {ptr} + {idx})) << 16)"
      raw = f"vload{w}(0, {ptr} + {idx})"
      return raw if ctype == acc else f"convert_{acc}{w}({raw})"
%>\
<%def name="copy(op, unit, checked)">\
<%
  # One operand's tile: a is (m, k) in As[m][k], b is (k, n) in Bs[k][n]. The copy walks `fast` fastest:
  # the unit-stride dim (whose stride is then the literal 1), or for a gather the local row direction.
  if op == "a":
      ext, start, limit = {"m": tm, "k": tk}, {"m": "m0", "k": "k0"}, {"m": "M", "k": "K"}
      stride = {"m": "a_sm", "k": "a_sk"}
      row = "k"
  else:
      ext, start, limit = {"k": tk, "n": tn}, {"k": "k0", "n": "n0"}, {"k": "K", "n": "N"}
      stride = {"k": "b_sk", "n": "b_sn"}
      row = "n"
  fast = unit or row
  if unit:
      stride[unit] = "1"
  slow = [d for d in ext if d != fast][0]
  w = vw if unit and ext[fast] % vw == 0 else 1
  total = ext[slow] * ext[fast]
  reps = -(-total // (w * nt))
  ss, ff = slow * 2, fast * 2

  def dst(f):
      idx = {slow: ss, fast: f}
      return f"As[{idx['m']}][{idx['k']}]" if op == "a" else f"Bs[{idx['k']}][{idx['n']}]"
  slow_ok = f"{start[slow]} + {ss} < {limit[slow]}"
  # nt_blocks (big products whose b is read along k, x @ W.T, on CPU tilings of a lone work-item): 16 x 16 blocks of
  # b transposed in registers (shuffle2 butterflies, vector stores) instead of 16 scalar stores per vector load.
  # Their own kernel: the blocks cost 0.18 s more code generation on PoCL, which small products do not win back
  # The launcher (matmul.py) asks for it only with a float tiling of one work-item, 16-wide vectors and tn, tk
  # multiples of 16; here it applies to b's unchecked copy along k.
  blocks = context.get("nt_blocks", False) and op == "b" and unit == "k" and not checked

  def butterfly(d):
      lo = ", ".join(str(16 + j - d if j & d else j) for j in range(16))
      hi = ", ".join(str(16 + j if j & d else j + d) for j in range(16))
      return f"(uint16)({lo})", f"(uint16)({hi})"
%>\
% if blocks:
            for (int blk = 0; blk < ${(tn // 16) * (tk // 16)}; ++blk) {
                const int nb = (blk / ${tk // 16}) * 16, kb = (blk % ${tk // 16}) * 16;
                const IDX g = b_base + (n0 + nb) * b_sn + k0 + kb;
%   for i in range(16):
                float16 r${i} = ${gload("b", f"g + {i} * b_sn", 16)};
%   endfor
%   for d in (8, 4, 2, 1):
<%    lo, hi = butterfly(d) %>\
%     for i in range(16):
%       if not i & d:
                { const float16 x = r${i}, y = r${i + d}; r${i} = shuffle2(x, y, ${lo}); r${i + d} = shuffle2(x, y, ${hi}); }
%       endif
%     endfor
%   endfor
%   for t in range(16):
                vstore16(r${t}, 0, &Bs[kb + ${t}][nb]);
%   endfor
            }
% else:
            for (int r = 0; r < ${reps}; ++r) {
                const int e = (tid + r * ${nt}) * ${w};
%   if total % (w * nt):
                if (e >= ${total}) break;  // a tile smaller than the work-group (skinny tilings)
%   endif
                const int ${ff} = e % ${ext[fast]}, ${ss} = e / ${ext[fast]};
                const IDX g = ${op}_base + (${start[slow]} + ${ss}) * ${stride[slow]} + (${start[fast]} + ${ff}) * ${stride[fast]};
%   if checked and w == 1:
                ${dst(ff)} = (${slow_ok} && ${start[fast]} + ${ff} < ${limit[fast]}) ? ${gload(op, "g", 1)} : (${acc})0;
%   else:
%     if checked:
                // a chunk wholly inside the matrix is copied as a vector, one that crosses its edge elementwise
                if (${slow_ok} && ${start[fast]} + ${ff} + ${w} <= ${limit[fast]}) {
%     endif
%     if w == 1:
                ${dst(ff)} = ${gload(op, "g", 1)};
%     elif fast == row:
                vstore${w}(${gload(op, "g", w)}, 0, &${dst(ff)});
%     else:
                const ${vt(w)} v = ${gload(op, "g", w)};
%       for t in range(w):
                ${dst(f"{ff} + {t}")} = v.s${"%x" % t};
%       endfor
%     endif
%     if checked:
                } else {
                    for (int t = 0; t < ${w}; ++t)
                        ${dst(f"{ff} + t")} = (${slow_ok} && ${start[fast]} + ${ff} + t < ${limit[fast]}) ? ${gload(op, "g + t", 1)} : (${acc})0;
                }
%     endif
%   endif
            }
% endif
</%def>\
<%def name="copy_any(op, units, checked)">\
## the run-time choice of copy: along the first unit-stride dim, else a gather
        if (${op}_s${units[0]} == 1) {
${copy(op, units[0], checked)}\
        } else if (${op}_s${units[1]} == 1) {
${copy(op, units[1], checked)}\
        } else {
${copy(op, "", checked)}\
        }
</%def>\
${cl.header(fp64, idx_t)}\

__kernel __attribute__((reqd_work_group_size(${lx}, ${ly}, 1)))
void ${name}(
    __global ${ctype} *out, IDX out_off,
    __global const ${ctype} *a, IDX a_off, IDX a_sb, IDX a_sm, IDX a_sk,
    __global const ${ctype} *b, IDX b_off, IDX b_sb, IDX b_sk, IDX b_sn,
    IDX M, IDX N, IDX K, IDX NB, IDX per${", __global const " + ctype + " *bias, IDX bias_off" if bias else ""})
{
    __local ${acc} As[${tm}][${tk + pad}];
    __local ${acc} Bs[${tk}][${tn + pad}];
% if vw > 1:
    ${acc} Cs[${wm}][${wn * vw}];  // an edge tile's results on their way out, element by element
% endif
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * ${lx} + tx;
    const IDX m0 = (IDX)get_group_id(1) * ${tm}, n0 = (IDX)get_group_id(0) * ${tn};
    const IDX batch = get_global_id(2);
% for i in range(wm):
    ${vt(vw)} ${", ".join(f"acc{i}_{j} = 0" for j in range(wn))};
% endfor

    const IDX b_end = min(batch * per + per, NB);
    for (IDX bb = batch * per; bb < b_end; ++bb) {
    const IDX a_base = a_off + bb * a_sb, b_base = b_off + bb * b_sb;
    for (IDX k0 = 0; k0 < K; k0 += ${tk}) {
        // the branches are uniform over the work-group: only edge tiles pay for bounds checks
        if (m0 + ${tm} <= M && k0 + ${tk} <= K) {
${copy_any("a", ("k", "m"), False)}\
        } else {
${copy_any("a", ("k", "m"), True)}\
        }
        if (n0 + ${tn} <= N && k0 + ${tk} <= K) {
${copy_any("b", ("n", "k"), False)}\
        } else {
${copy_any("b", ("n", "k"), True)}\
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

    const IDX o_base = out_off + batch * M * N;
% if vw > 1:
## CPU tilings: an interior tile stores whole vectors; an edge tile goes through Cs and a loop over its elements.
## One unrolled copy of the checked store per accumulator (32 of them for 16 x 32 tiles) doubled PoCL's code
## generation for the kernel (1.9 s against 0.9 s on first use, AMD EPYC).
    if (m0 + ${tm} <= M && n0 + ${tn} <= N${" && 0" if ctype == "bfloat16" else ""}) {  /* bfloat16: no vector store */
%   for i in range(wm):
%     for j in range(wn):
        {
            const IDX n = n0 + (tx + ${lx * j}) * ${vw};
            const IDX o = o_base + (m0 + ty + ${ly * i}) * N + n;
%       if bias:
            if (bias) acc${i}_${j} += vload${vw}(0, bias + bias_off + n);  /* linear's bias (float/double) */
%       endif
%       if half:
            vstore_half${vw}_rte(acc${i}_${j}, 0, out + o);
%       elif ctype == "bfloat16":
            /* never taken */
%       elif ctype == acc:
            vstore${vw}(acc${i}_${j}, 0, out + o);
%       else:
            vstore${vw}(convert_${ctype}${vw}(acc${i}_${j}), 0, out + o);
%       endif
        }
%     endfor
%   endfor
    } else {
%   for i in range(wm):
%     for j in range(wn):
        vstore${vw}(acc${i}_${j}, 0, &Cs[${i}][${j * vw}]);
%     endfor
%   endfor
        for (int i = 0; i < ${wm}; ++i) {
            const IDX m = m0 + ty + ${ly} * i;
            if (m >= M) break;
            for (int j = 0; j < ${wn}; ++j) {
                for (int v = 0; v < ${vw}; ++v) {
                    const IDX n = n0 + (tx + ${lx} * j) * ${vw} + v;
                    if (n < N) {
%   if bias:
                        ${cl.module.store(ctype, "out", "o_base + m * N + n", f"bias ? Cs[i][j * {vw} + v] + bias[bias_off + n] : Cs[i][j * {vw} + v]")};
%   else:
                        ${cl.module.store(ctype, "out", "o_base + m * N + n", f"Cs[i][j * {vw} + v]")};
%   endif
                    }
                }
            }
        }
    }
% else:
## GPU tilings (vw == 1): each accumulator is one element, stored where it lies inside the matrix.
% for i in range(wm):
    {
        const IDX m = m0 + ty + ${ly * i};
        if (m < M) {
%   for j in range(wn):
            {
                const IDX n = n0 + (tx + ${lx * j}) * ${vw};
                const IDX o = o_base + m * N + n;
%     if short:
                if (n < N) ${cl.module.store(ctype, "out", "o", f"acc{i}_{j}")};
%     elif bias:
                if (n < N) out[o] = (${ctype})(bias ? acc${i}_${j} + bias[bias_off + n] : acc${i}_${j});
%     else:
                if (n < N) out[o] = (${ctype})acc${i}_${j};
%     endif
            }
%   endfor
        }
    }
% endfor
% endif
}
