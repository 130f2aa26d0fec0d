## Normalization statistics: mean[m] and biased var[m] of the K elements of row m, in one read.
## Rows are numbered by the kept dims, elements by the reduced dims; the launcher coalesces each group
## (``outer_nd`` / ``inner_nd`` dims with their strides), so batch-norm's per-channel (N, H*W) rows and
## layer/group-norm's contiguous rows are both read in place. Welford's update per work-item, Chan's
## pairwise merge across work-items: no catastrophic cancellation, float32 accumulation for float16.
##
## ``group``: one work-group per row (long rows); otherwise one work-item per row.
## ``vec`` > 1 (CPU devices, one work-item per row, the last reduced dim contiguous and at least 2 * vec long): the
## work-item walks the row segment by segment (the other reduced dims decomposed once per segment, not per element)
## with two vec-wide Welford streams along each segment and a scalar one for its tail, then merges the 2 * vec + 1
## partial results (Chan). PoCL does not vectorize across work-items around an inner loop, so the scalar form ran
## batch-norm's per-channel statistics at ~4 ns per element (2 ms for [32, 64, 16, 16]).
<%namespace name="cl" file="prelude.cl.mako"/>\
${cl.header(fp64, idx_t)}\
<% vec = context.get("vec", 1) %>\
#define ACC ${acc}

// m2 / K, but NaN where mean * mean overflows ACC: PyTorch's Welford merges each row into an empty (n=0, mean=0)
// partial, whose d * d * 0 is then inf * 0 (layer_norm of [3e38] * 3 is NaN there); we match it on every device
inline ACC biased_var(ACC mean, ACC m2, IDX K) {
    return isinf(mean * mean) ? (ACC)NAN : m2 / (ACC)K;
}

% if group or vec > 1:
// (n, mean, m2) of one part merged into another (Chan et al.)
inline void merge(ACC *n, ACC *mean, ACC *m2, ACC n2, ACC mean2, ACC m22) {
    if (n2 == 0) return;
    const ACC total = *n + n2, d = mean2 - *mean;
    *mean += d * (n2 / total);
    *m2 += m22 + d * d * (*n * n2 / total);
    *n = total;
}
% endif

__kernel void ${name}(
    __global const ${in_ctype} *x, IDX x_off,
% for d in range(outer_nd):
    IDX on${d}, IDX os${d},
% endfor
% for d in range(inner_nd):
    IDX kn${d}, IDX ks${d},
% endfor
    IDX M, IDX K, __global ACC *mean_out, __global ACC *var_out
% if group:
    , __local ACC *ln, __local ACC *lmean, __local ACC *lm2)
% else:
    )
% endif
{
% if vec > 1:
<%
  VT = f"{acc}{vec}"
  def vload(addr):
      if in_ctype == "half":
          return f"vload_half{vec}(0, x + {addr})"
      raw = f"vload{vec}(0, x + {addr})"
      return raw if in_ctype == acc else f"convert_{acc}{vec}({raw})"
  last = inner_nd - 1
%>\
    const IDX m = get_global_id(0);
    if (m >= M) return;
    IDX base = x_off, rem = m;
%   for d in reversed(range(outer_nd)):
    base += ${"rem" if d == 0 else f"(rem % on{d})"} * os${d};
%     if d:
    rem /= on${d};
%     endif
%   endfor
    ${VT} mean0 = 0, m20 = 0, mean1 = 0, m21 = 0;
    ACC n0 = 0, n1 = 0, tn = 0, tmean = 0, tm2 = 0;
    const IDX segs = K / kn${last};
    for (IDX s = 0; s < segs; ++s) {
        IDX p = base;
%   if last:
        IDX r = s;
%     for d in reversed(range(last)):
        p += ${"r" if d == 0 else f"(r % kn{d})"} * ks${d};
%       if d:
        r /= kn${d};
%       endif
%     endfor
%   endif
        IDX j = 0;
        for (; j + ${2 * vec} <= kn${last}; j += ${2 * vec}) {
            const ${VT} v0 = ${vload("p + j")}, v1 = ${vload(f"p + j + {vec}")};
            n0 += 1;
            n1 += 1;
            const ${VT} d0 = v0 - mean0, d1 = v1 - mean1;
            mean0 += d0 / n0;
            mean1 += d1 / n1;
            m20 += d0 * (v0 - mean0);
            m21 += d1 * (v1 - mean1);
        }
        if (j + ${vec} <= kn${last}) {
            const ${VT} v0 = ${vload("p + j")};
            n0 += 1;
            const ${VT} d0 = v0 - mean0;
            mean0 += d0 / n0;
            m20 += d0 * (v0 - mean0);
            j += ${vec};
        }
        for (; j < kn${last}; ++j) {
            const ACC v = ${cl.module.load(in_ctype, "x", "p + j", to="ACC")};
            tn += 1;
            const ACC delta = v - tmean;
            tmean += delta / tn;
            tm2 += delta * (v - tmean);
        }
    }
    ACC n = 0, mean = 0, m2 = 0;
%   for k in range(vec):
    merge(&n, &mean, &m2, n0, mean0.s${"%x" % k}, m20.s${"%x" % k});
    merge(&n, &mean, &m2, n1, mean1.s${"%x" % k}, m21.s${"%x" % k});
%   endfor
    merge(&n, &mean, &m2, tn, tmean, tm2);
    mean_out[m] = mean;
    var_out[m] = biased_var(mean, m2, K);
}
% else:
% if group:
    const IDX m = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
% else:
    const IDX m = get_global_id(0);
    const int lid = 0, L = 1;
    if (m >= M) return;
% endif
    IDX base = x_off, rem = m;
% for d in reversed(range(outer_nd)):
    base += ${"rem" if d == 0 else f"(rem % on{d})"} * os${d};
%   if d:
    rem /= on${d};
%   endif
% endfor
    IDX count = 0;
    ACC mean = 0, m2 = 0;
    for (IDX j = lid; j < K; j += L) {
        IDX p = base;
% if inner_nd == 1:
        p += j * ks0;
% else:
        IDX r = j;
%   for d in reversed(range(inner_nd)):
        p += ${"r" if d == 0 else f"(r % kn{d})"} * ks${d};
%     if d:
        r /= kn${d};
%     endif
%   endfor
% endif
        const ACC v = ${cl.module.load(in_ctype, "x", "p", to="ACC")};
        count += 1;
        const ACC delta = v - mean;
        mean += delta / (ACC)count;
        m2 += delta * (v - mean);
    }
% if group:
    ACC n = (ACC)count;
    ln[lid] = n;
    lmean[lid] = mean;
    lm2[lid] = m2;
    // pairwise tree: at step h the work-items below h read [h, 2h) and write [0, h)
    for (int h = L >> 1; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h) {
            merge(&n, &mean, &m2, ln[lid + h], lmean[lid + h], lm2[lid + h]);
            ln[lid] = n;
            lmean[lid] = mean;
            lm2[lid] = m2;
        }
    }
    if (lid == 0) {
        mean_out[m] = mean;
        var_out[m] = biased_var(mean, m2, K);
    }
% else:
    mean_out[m] = mean;
    var_out[m] = biased_var(mean, m2, K);
% endif
}
% endif
