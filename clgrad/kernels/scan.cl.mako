## Scan kernel family (cumsum, cumprod): out[r, j] = in[r, 0] op in[r, 1] op ... op in[r, j] along one dim.
##
## The launcher views the tensor as `rows` rows of `n` elements: a row's base address comes from unravelling r
## over the coalesced outer dims (separate strides for in and out), element j sits at base + j * step. A reverse
## scan (the gradient of cumsum) is the same kernel given the last element as base and a negated step.
##
## kind == "serial": one work-item per row, accumulating in order (short rows, or enough rows for every core).
## kind == "block":  one work-group per chunk of C = WG * PER elements of a row: a sequential scan of PER
##                   elements per work-item, then a Hillis-Steele scan of the WG work-item totals in __local
##                   memory. With several chunks per row it writes the accumulation type to a scratch
##                   [rows, n] and each chunk's total to part[rows, chunks] for the launcher to scan.
## kind == "carry":  adds the scanned totals of the preceding chunks, converts and stores the final result.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  is_float = acc in ("float", "double")
  IDENTITY = {"sum": "0", "prod": "1"}[op]
  # integer sums and products wrap through ulong: signed overflow is undefined in C, torch wraps
  COMBINE = {
      "sum": "a + b" if is_float else "(ACC)((ulong)a + (ulong)b)",
      "prod": "a * b" if is_float else "(ACC)((ulong)a * (ulong)b)",
  }[op]
  def load(buf, ctype, addr):
      return cl.module.load(ctype, buf, addr, to="ACC")
  def store(value, addr):
      return cl.module.store(out_ctype, "out", addr, value)
  # whether this launch writes the output (strided, converted) or the accumulation-typed scratch
  final = not to_scratch
%>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

inline ACC combine(ACC a, ACC b) { return ${COMBINE}; }

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
% if kind == "serial":
__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off, IDX in_step,
    __global ${out_ctype} *out, IDX out_off, IDX out_step,
${outer_args(True, True)}\
    IDX rows, IDX n)
{
    if (get_global_id(0) >= (size_t)rows) return;
    const IDX r = (IDX)get_global_id(0);
    IDX ib = in_off, ob = out_off;
${unravel(True, True)}\
    ACC acc = ${IDENTITY};
    for (IDX j = 0; j < n; ++j) {
        acc = combine(acc, ${load("in", in_ctype, "ib + j * in_step")});
        ${store("acc", "ob + j * out_step")};
    }
}
% elif kind == "block":
__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off, IDX in_step,
% if final:
    __global ${out_ctype} *out, IDX out_off, IDX out_step,
% else:
    __global ACC *out, __global ACC *part,
% endif
${outer_args(True, final)}\
    IDX rows, IDX n, __local ACC *buf, __local ACC *tot)
{
    const int lid = get_local_id(0), WG = get_local_size(0);
    const IDX chunk = get_group_id(0), r = get_group_id(1);
    const IDX C = (IDX)WG * ${per}, start = chunk * C;
    IDX ib = in_off;
% if final:
    IDX ob = out_off;
% endif
${unravel(True, final)}\
    // coalesced loads into __local memory; the tail past n holds the identity
    for (int k = 0; k < ${per}; ++k) {
        const int i = k * WG + lid;
        const IDX p = start + i;
        buf[i] = p < n ? ${load("in", in_ctype, "ib + p * in_step")} : (ACC)${IDENTITY};
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // each work-item scans its PER consecutive elements
    ACC t = ${IDENTITY};
    for (int k = 0; k < ${per}; ++k) {
        t = combine(t, buf[lid * ${per} + k]);
        buf[lid * ${per} + k] = t;
    }
    tot[lid] = t;
    // Hillis-Steele inclusive scan of the work-item totals; the middle barrier keeps reads ahead of writes
    for (int s = 1; s < WG; s <<= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        const ACC v = lid >= s ? tot[lid - s] : (ACC)${IDENTITY};
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid >= s) tot[lid] = combine(v, tot[lid]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid > 0) {
        const ACC prefix = tot[lid - 1];
        for (int k = 0; k < ${per}; ++k) buf[lid * ${per} + k] = combine(prefix, buf[lid * ${per} + k]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < ${per}; ++k) {
        const int i = k * WG + lid;
        const IDX p = start + i;
        if (p < n) {
% if final:
            ${store("buf[i]", "ob + p * out_step")};
% else:
            out[r * n + p] = buf[i];
% endif
        }
    }
% if not final:
    if (lid == 0) part[r * get_num_groups(0) + chunk] = tot[WG - 1];
% endif
}
% elif kind == "carry":
## scratch[rows, n] holds per-chunk scans, carry[rows, chunks] the inclusive scan of the chunk totals
__kernel void ${name}(
    __global const ACC *scratch, __global const ACC *carry, IDX C, IDX chunks,
    __global ${out_ctype} *out, IDX out_off, IDX out_step,
${outer_args(False, True)}\
    IDX rows, IDX n)
{
    if (get_global_id(0) >= (size_t)n) return;
    const IDX p = (IDX)get_global_id(0), r = (IDX)get_global_id(1);
    IDX ob = out_off;
${unravel(False, True)}\
    const IDX chunk = p / C;
    ACC v = scratch[r * n + p];
    if (chunk > 0) v = combine(carry[r * chunks + chunk - 1], v);
    ${store("v", "ob + p * out_step")};
}
% endif
