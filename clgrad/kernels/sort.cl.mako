## Sort kernel family: a stable sort of every row of a tensor, plus the gather / scatter / bin-count helpers
## that sort-based ops (topk, median, unique, bincount and the sort gradients) are built from.
##
## Rows are addressed as in scan.cl.mako: r unravels over the coalesced outer dims, element j of a row sits at
## base + j * step. `before(a, b)` is the strict order (NaN after every number ascending, before them
## descending, NaNs tied with each other); equal keys keep their order because every merge below sends a tie
## from the left run first, which makes the whole sort stable for any row length, power of two or not.
##
## kind == "serial": one work-item per short row, insertion sort in private memory.
## kind == "local":  one work-group per chunk of C elements of a row: load into __local memory and merge runs
##                   of width 1, 2, 4, ... in place of a bitonic network. Each element finds its destination by
##                   its rank in the sibling run (a binary search), so a pass is one parallel step.
## kind == "segsort": (CPU devices) one work-item per row segment, a serial merge sort in global scratch.
## kind == "merge":  one global pass merging runs of width w of the [rows, n] scratch the same way.
## kind == "gather" / "scatter": contiguous [outer, n, inner] arrays indexed along the middle dim.
## kind == "bincount": per bin, two binary searches in a sorted input (and a sum of its sorted weights).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  is_float = key_t in ("float", "double")
  if is_float:
      BEFORE = "a > b || (isnan(a) && !isnan(b))" if descending else "a < b || (isnan(b) && !isnan(a))"
  else:
      BEFORE = "a > b" if descending else "a < b"
  def load(buf, addr):
      return cl.module.load(in_ctype, buf, addr, to="K")
  def store_value(value, addr):
      return cl.module.store(in_ctype, "values", addr, value)
%>\
${cl.header(fp64, idx_t)}\
#define K ${key_t}
#define I ${pos_t}

inline int before(K a, K b) { return ${BEFORE}; }

<%def name="outer_args(with_in, with_out)">\
% for d in range(outer_nd):
    IDX on${d},${f" IDX is{d}," if with_in else ""}${f" IDX os{d}," if with_out else ""}
% endfor
</%def>\
<%def name="unravel(with_in, with_out)">\
    IDX rem = r;
% for d in reversed(range(outer_nd)):
    {
        const IDX c = ${"rem" if d == 0 else f"rem % on{d}"};
%   if d:
        rem /= on${d};
%   endif
%   if with_in:
        ib += c * is${d};
%   endif
%   if with_out:
        ob += c * os${d};
%   endif
    }
% endfor
</%def>\
## The destination of keys[i] when runs [s, mid) and [mid, e) of `keys` merge: its place in its own run plus the
## number of elements of the other run that go before it (strictly before for the left run, so ties stay put).
<%def name="rank(keys)">\
            const IDX s = (i / (2 * w)) * (2 * w), mid = min(s + w, L), e = min(s + 2 * w, L);
            const K x = ${keys}[i];
            IDX lo, hi;
            if (i < mid) {
                lo = mid; hi = e;
                while (lo < hi) { const IDX m = lo + (hi - lo) / 2; if (before(${keys}[m], x)) lo = m + 1; else hi = m; }
                dst = i + lo - mid;
            } else {
                lo = s; hi = mid;
                while (lo < hi) { const IDX m = lo + (hi - lo) / 2; if (!before(x, ${keys}[m])) lo = m + 1; else hi = m; }
                dst = i - mid + lo;
            }
</%def>\
<%def name="final_args()">\
    __global ${val_ctype} *values, IDX v_off, __global long *indices, IDX i_off, IDX out_step,
</%def>\
% if kind == "serial":
__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off, IDX in_step,
${final_args()}\
${outer_args(True, True)}\
    IDX rows, IDX n)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX r = (IDX)get_global_id(0);
    IDX ib = in_off, ob = 0;
${unravel(True, True)}\
    K keys[${serial_max}];
    int pos[${serial_max}];
    for (int j = 0; j < (int)n; ++j) {
        const K x = ${load("in", "ib + j * in_step")};
        int i = j;
        for (; i > 0 && before(x, keys[i - 1]); --i) { keys[i] = keys[i - 1]; pos[i] = pos[i - 1]; }
        keys[i] = x;
        pos[i] = j;
    }
    for (int j = 0; j < (int)n; ++j) {
        ${store_value("keys[j]", "v_off + ob + j * out_step")};
        indices[i_off + ob + j * out_step] = pos[j];
    }
}
% elif kind == "local":
__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off, IDX in_step,
% if final:
${final_args()}\
% else:
    __global K *sk, __global I *si,
% endif
${outer_args(True, final)}\
    IDX rows, IDX n, IDX C,
    __local K *ka, __local I *ia, __local K *kb, __local I *ib_)
{
    const int lid = get_local_id(0), WG = get_local_size(0);
    const IDX r = get_group_id(1), start = get_group_id(0) * C, L = min(C, n - start);
    IDX ib = in_off${", ob = 0" if final else ""};
${unravel(True, final)}\
    for (IDX i = lid; i < L; i += WG) {
        ka[i] = ${load("in", "ib + (start + i) * in_step")};
        ia[i] = (I)(start + i);
    }
    __local K *ks = ka, *kd = kb;
    __local I *ps = ia, *pd = ib_;
    // L is the same for the whole group, so every work-item meets every barrier
    for (IDX w = 1; w < L; w <<= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        for (IDX i = lid; i < L; i += WG) {
            IDX dst;
${rank("ks")}\
            kd[dst] = x;
            pd[dst] = ps[i];
        }
        __local K *tk = ks; ks = kd; kd = tk;
        __local I *tp = ps; ps = pd; pd = tp;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (IDX i = lid; i < L; i += WG) {
% if final:
        ${store_value("ks[i]", "v_off + ob + (start + i) * out_step")};
        indices[i_off + ob + (start + i) * out_step] = (long)ps[i];
% else:
        sk[r * n + start + i] = ks[i];
        si[r * n + start + i] = ps[i];
% endif
    }
}
% elif kind == "segsort":
## CPU devices: one work-item sorts a whole segment [c * S, c * S + L) of a row serially (insertion-sorted runs of
## RUN, then bottom-up two-finger merges that take ties from the left run) in the [rows, n] scratch pair a / b.
__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off, IDX in_step,
% if final:
${final_args()}\
% endif
    __global K *ka, __global I *pa, __global K *kb, __global I *pb,
${outer_args(True, final)}\
    IDX rows, IDX n, IDX S, IDX segs)
{
    if (get_global_id(0) >= (size_t)(rows * segs)) return;
    const IDX g = (IDX)get_global_id(0), r = g / segs, start = g % segs * S, L = min(S, n - start);
    IDX ib = in_off${", ob = 0" if final else ""};
${unravel(True, final)}\
    __global K *ks = ka + r * n + start, *kd = kb + r * n + start;
    __global I *ps = pa + r * n + start, *pd = pb + r * n + start;
    for (IDX j = 0; j < L; ++j) {
        const K x = ${load("in", "ib + (start + j) * in_step")};
        IDX i = j;
        for (const IDX lo = j / ${run} * ${run}; i > lo && before(x, ks[i - 1]); --i) { ks[i] = ks[i - 1]; ps[i] = ps[i - 1]; }
        ks[i] = x;
        ps[i] = (I)(start + j);
    }
    for (IDX w = ${run}; w < L; w <<= 1) {
        for (IDX s = 0; s < L; s += 2 * w) {
            const IDX mid = min(s + w, L), e = min(s + 2 * w, L);
            IDX p = s, q = mid, o = s;
            while (p < mid && q < e) {
                if (before(ks[q], ks[p])) { kd[o] = ks[q]; pd[o++] = ps[q++]; }
                else { kd[o] = ks[p]; pd[o++] = ps[p++]; }
            }
            for (; p < mid; ++p, ++o) { kd[o] = ks[p]; pd[o] = ps[p]; }
            for (; q < e; ++q, ++o) { kd[o] = ks[q]; pd[o] = ps[q]; }
        }
        __global K *tk = ks; ks = kd; kd = tk;
        __global I *tp = ps; ps = pd; pd = tp;
    }
    for (IDX j = 0; j < L; ++j) {
% if final:
        ${store_value("ks[j]", "v_off + ob + (start + j) * out_step")};
        indices[i_off + ob + (start + j) * out_step] = (long)ps[j];
% else:
        // the merge passes read buffer a: copy back when the result ended in b
        if (ks != ka + r * n + start) { kd[j] = ks[j]; pd[j] = ps[j]; }
% endif
    }
}
% elif kind == "merge":
__kernel void ${name}(
    __global const K *sk, __global const I *si,
% if final:
${final_args()}\
% else:
    __global K *dk, __global I *di,
% endif
${outer_args(False, final)}\
    IDX rows, IDX n, IDX w)
{
    if (get_global_id(0) >= (size_t)n) return;
    const IDX i = (IDX)get_global_id(0), r = (IDX)get_global_id(1), L = n;
    __global const K *keys = sk + r * n;
    IDX dst;
${rank("keys")}\
% if final:
    IDX ob = 0;
${unravel(False, True)}\
    ${store_value("x", "v_off + ob + dst * out_step")};
    indices[i_off + ob + dst * out_step] = (long)si[r * n + i];
% else:
    dk[r * n + dst] = x;
    di[r * n + dst] = si[r * n + i];
% endif
}
% elif kind == "gather":
## out[o, j, i] = src[o, index[o, j, i], i]; an index outside [0, n) (never passed by clgrad itself) gives 0
__kernel void ${name}(
    __global const ${val_ctype} *src, IDX src_off, __global const long *index, IDX index_off,
    __global ${val_ctype} *out, IDX out_off, IDX m, IDX n, IDX inner, IDX total)
{
    if (get_global_id(0) >= (size_t)total) return;
    const IDX g = (IDX)get_global_id(0), i = g % inner, o = g / inner / m;
    const long k = index[index_off + g];
    out[out_off + g] = (k >= 0 && k < n) ? src[src_off + (o * n + k) * inner + i] : (${val_ctype})0;
}
% elif kind == "scatter":
## out[o, index[o, j, i], i] = src[o, j, i] (or j itself), where mask holds; callers pass distinct indices
__kernel void ${name}(
% if not iota:
    __global const ${val_ctype} *src, IDX src_off,
% endif
    __global const long *index, IDX index_off,
% if masked:
    __global const long *mask, IDX mask_off,
% endif
    __global ${val_ctype} *out, IDX out_off, IDX m, IDX n, IDX inner, IDX total)
{
    if (get_global_id(0) >= (size_t)total) return;
    const IDX g = (IDX)get_global_id(0), i = g % inner, j = g / inner % m, o = g / inner / m;
% if masked:
    if (mask[mask_off + g] == 0) return;
% endif
    const long k = index[index_off + g];
    if (k < 0 || k >= n) return;
    out[out_off + (o * n + k) * inner + i] = ${"(long)j" if iota else "src[src_off + g]"};
}
% elif kind == "bincount":
inline IDX lower_bound(__global const ${in_ctype} *a, IDX n, long v) {
    IDX lo = 0, hi = n;
    while (lo < hi) { const IDX m = lo + (hi - lo) / 2; if ((long)a[m] < v) lo = m + 1; else hi = m; }
    return lo;
}

__kernel void ${name}(
    __global const ${in_ctype} *sorted, IDX n,
% if weighted:
    __global const ${val_ctype} *weights,
% endif
    __global ${val_ctype} *out, IDX nbins)
{
    if (get_global_id(0) >= (size_t)nbins) return;
    const IDX b = (IDX)get_global_id(0);
    const IDX lo = lower_bound(sorted, n, (long)b), hi = lower_bound(sorted, n, (long)b + 1);
% if weighted:
    ${val_ctype} acc = 0;
    for (IDX j = lo; j < hi; ++j) acc += weights[j];
    out[b] = acc;
% else:
    out[b] = (long)(hi - lo);
% endif
}
% endif
