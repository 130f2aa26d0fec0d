## Reduction kernel family: out[m] = combine over j of in[addr(m, j)], for m < M outputs and j < K.
## The launcher has split the input's dims into outer (kept) and inner (reduced) groups, each
## coalesced, so addresses are in_off + sum(outer coords * os) + sum(inner coords * ks) for any layout.
##
## The NDRange is 2-D with local size (LX, LY): work-items along x take consecutive outputs, the LY
## work-items along y share one output's range [g * chunk, (g + 1) * chunk) (g = group id along y),
## each accumulating a strided subset, then a tree in __local memory combines the LY partial results.
## LY = 1 is the one-work-item-per-output case; G > 1 groups along y write partials that the launcher
## reduces with a second launch of this template (idx == "load" then reads the partials' indices).
<%
  is_float = acc in ("float", "double")
  IDENTITY = {
      "sum": "0", "prod": "1", "all": "1", "any": "0",
      "max": "-INFINITY" if is_float else {"uchar": "0", "char": "CHAR_MIN", "short": "SHRT_MIN", "int": "INT_MIN", "long": "LONG_MIN"}.get(acc),
      "min": "INFINITY" if is_float else {"uchar": "UCHAR_MAX", "char": "CHAR_MAX", "short": "SHRT_MAX", "int": "INT_MAX", "long": "LONG_MAX"}.get(acc),
  }
  # a op b for the ops without a winner; max/min keep a NaN once they have seen one (torch semantics)
  COMBINE = {
      # integer sums wrap through ulong: signed overflow is undefined in C, numpy and torch wrap
      "sum": "a + b" if is_float else "(ACC)((ulong)a + (ulong)b)",
      "prod": "a * b" if is_float else "(ACC)((ulong)a * (ulong)b)",
      "all": "a & b", "any": "a | b",
      "max": "(b > a || isnan(b)) ? b : a" if is_float else "b > a ? b : a",
      "min": "(b < a || isnan(b)) ? b : a" if is_float else "b < a ? b : a",
  }
  # whether (b, ib) replaces (a, ia) for max/min with indices: a better value, else the first occurrence
  cmp = ">" if op == "max" else "<"
  # within one work-item indices only grow, so ties keep the held value: `a == a` is "a is not NaN"
  # and !(b <= a) is "b > a or b is NaN", which is cheaper than isnan
  ncmp = "<=" if op == "max" else ">="
  if is_float:
      BETTER = f"(b {cmp} a) || (isnan(b) && !isnan(a)) || ((b == a || (isnan(a) && isnan(b))) && ib < ia)"
      LATER_BETTER = f"a == a && !(b {ncmp} a)"
  else:
      BETTER = f"(b {cmp} a) || (b == a && ib < ia)"
      LATER_BETTER = f"b {cmp} a"
  def load(addr):
      raw = f"vload_half({addr}, in)" if in_ctype == "half" else f"in[{addr}]"
      return f"(ACC)({raw} != 0)" if op in ("all", "any") else f"(ACC){raw}"
  with_idx = idx != "none"
%>\
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
#define ACC ${acc}
#define IDX ${idx_t}

% if with_idx:
inline int better(ACC b, long ib, ACC a, long ia) { return ${BETTER}; }
inline int later_better(ACC b, ACC a) { return ${LATER_BETTER}; }
% else:
inline ACC combine(ACC a, ACC b) { return ${COMBINE[op]}; }
% endif

__kernel void ${name}(
    __global const ${in_ctype} *in, IDX in_off,
% for d in range(outer_nd):
    IDX on${d}, IDX os${d},
% endfor
% for d in range(inner_nd):
    IDX kn${d}, IDX ks${d},
% endfor
% if idx == "load":
    __global const long *in_idx,
% endif
    IDX M, IDX K, IDX chunk,
    __global ${out_ctype} *out, IDX out_off,
% if with_idx:
    __global long *out_idx, IDX idx_off, __local long *lidx,
% endif
    __local ACC *lval)
{
    const IDX m = get_global_id(0);
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int LX = get_local_size(0), LY = get_local_size(1);
    const IDX g = get_group_id(1);
    ACC acc = ${IDENTITY[op]};
% if with_idx:
    long ai = LONG_MAX;
% endif
    // work-items past M still take part in the barriers below, with the identity
    if (m < M) {
        IDX base = in_off, rem = m;
% for d in reversed(range(outer_nd)):
        base += ${"rem" if d == 0 else f"(rem % on{d})"} * os${d};
%   if d:
        rem /= on${d};
%   endif
% endfor
        const IDX end = min(K, (g + 1) * chunk);
        for (IDX j = g * chunk + ly; j < end; j += LY) {
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
            ACC b = ${load("p")};
% if with_idx:
            if (ai == LONG_MAX || later_better(b, acc)) { acc = b; ai = ${"in_idx[p]" if idx == "load" else "j"}; }
% else:
            acc = combine(acc, b);
% endif
        }
    }
    const int slot = ly * LX + lx;
    lval[slot] = acc;
% if with_idx:
    lidx[slot] = ai;
% endif
    // pairwise tree over the LY partial results; reads [s, 2s) and writes [0, s) never overlap
    for (int s = LY >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ly < s) {
            ACC b = lval[slot + s * LX];
% if with_idx:
            long ib = lidx[slot + s * LX];
            if (better(b, ib, acc, ai)) { acc = b; ai = ib; }
            lval[slot] = acc;
            lidx[slot] = ai;
% else:
            acc = combine(acc, b);
            lval[slot] = acc;
% endif
        }
    }
    if (ly == 0 && m < M) {
        const IDX o = g * M + m;
% if out_cast == "half":
        vstore_half_rte((float)acc, out_off + o, out);
% elif out_cast == "bool":
        out[out_off + o] = (uchar)(acc != 0);
% else:
        out[out_off + o] = (${out_ctype})acc;
% endif
% if with_idx:
        out_idx[idx_off + o] = ai;
% endif
    }
}
