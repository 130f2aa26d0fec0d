## Normalization statistics: mean[m] and biased var[m] of the K elements of row m, in one read.
## Rows are numbered by the kept dims, elements by the reduced dims; the launcher coalesces each group
## (``outer_nd`` / ``inner_nd`` dims with their strides), so batch-norm's per-channel (N, H*W) rows and
## layer/group-norm's contiguous rows are both read in place. Welford's update per work-item, Chan's
## pairwise merge across work-items: no catastrophic cancellation, float32 accumulation for float16.
##
## ``group``: one work-group per row (long rows); otherwise one work-item per row.
<%namespace name="cl" file="prelude.cl.mako"/>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

// m2 / K, but NaN where mean * mean overflows ACC: PyTorch's Welford merges each row into an empty (n=0, mean=0)
// partial, whose d * d * 0 is then inf * 0 (layer_norm of [3e38] * 3 is NaN there); we match it on every device
inline ACC biased_var(ACC mean, ACC m2, IDX K) {
    return isinf(mean * mean) ? (ACC)NAN : m2 / (ACC)K;
}

% if group:
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
