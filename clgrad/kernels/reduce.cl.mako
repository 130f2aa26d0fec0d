## Reduction kernel family: out[m] = combine over j of in[addr(m, j)], for m < M outputs and j < K.
## The launcher has split the input's dims into outer (kept) and inner (reduced) groups, each
## coalesced, so addresses are in_off + sum(outer coords * os) + sum(inner coords * ks) for any layout.
##
## The NDRange is 2-D with local size (LX, LY): work-items along x take consecutive outputs, the LY
## work-items along y share one output's range [g * chunk, (g + 1) * chunk) (g = group id along y),
## each accumulating a strided subset, then a tree in __local memory combines the LY partial results.
## LY = 1 is the one-work-item-per-output case; G > 1 groups along y write partials that the launcher
## reduces with a second launch of this template (idx == "load" then reads the partials' indices).
##
## layout == "loop" is the CPU kernel (PoCL runs barriers and local-memory trees poorly and does not vectorize
## across work-items around an inner loop): no local memory, one work-item per (output, chunk g) looping
## serially, with explicit VEC-wide vectors: axis "row" loads VEC consecutive reduced elements (inner stride 1)
## into VEC accumulators and folds them at the end, axis "col" loads VEC consecutive outputs (kept stride 1) and
## stores VEC results (UNROLL vectors of them per work-item); axis "scalar" (VEC 1) serves every other layout and the ops with indices.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  # identity, combine, videntity, vcombine, mask and arg come from the op's record in registry/reductions.py
  is_float = acc in ("float", "double")
  # whether (b, ib) replaces (a, ia) for max/min with indices: a better value, else the first occurrence
  cmp = arg or ">"
  # within one work-item indices only grow, so ties keep the held value: `a == a` is "a is not NaN"
  # and !(b <= a) is "b > a or b is NaN", which is cheaper than isnan
  ncmp = {">": "<=", "<": ">="}[cmp]
  if is_float:
      BETTER = f"(b {cmp} a) || (isnan(b) && !isnan(a)) || ((b == a || (isnan(a) && isnan(b))) && ib < ia)"
      LATER_BETTER = f"a == a && !(b {ncmp} a)"
  else:
      BETTER = f"(b {cmp} a) || (b == a && ib < ia)"
      LATER_BETTER = f"b {cmp} a"
  def load(addr):
      raw = cl.module.load(in_ctype, "in", addr)
      return f"(ACC)({raw} != 0)" if mask else f"(ACC){raw}"
  with_idx = idx != "none"
  # the vector forms (VEC lanes; masks are int lanes, -1 for true)
  VACC = "int" if mask else acc
  def vload(addr):
      raw = f"vload_half{vec}(0, in + {addr})" if in_ctype == "half" else f"vload{vec}(0, in + {addr})"
      if in_ctype == "bfloat16":  # ushort lanes: the upper halves of floats
          raw = f"as_float{vec}(convert_uint{vec}({raw}) << 16)"
      zero = "(float)0" if in_ctype in ("half", "bfloat16") else f"({in_ctype})0"
      return f"convert_int{vec}({raw} != {zero})" if mask else f"convert_{acc}{vec}({raw})"
  def lane(v, k):
      x = f"{v}.s{'0123456789abcdef'[k]}"
      return f"(ACC)({x} != 0)" if mask else x
%>\
<%def name="outer_base(m)">\
## base = the input address of output ${m}
        IDX base = in_off, rem = ${m};
% for d in reversed(range(outer_nd)):
        base += ${"rem" if d == 0 else f"(rem % on{d})"} * os${d};
%   if d:
        rem /= on${d};
%   endif
% endfor
</%def>\
<%def name="inner_addr(j)">\
## p = the input address of reduced element ${j} of the current output
            IDX p = base;
% if inner_nd == 1:
            p += ${j} * ks0;
% else:
            IDX r = ${j};
%   for d in reversed(range(inner_nd)):
            p += ${"r" if d == 0 else f"(r % kn{d})"} * ks${d};
%     if d:
            r /= kn${d};
%     endif
%   endfor
% endif
</%def>\
<%def name="accumulate(j)">\
            ACC b = ${load("p")};
% if with_idx:
            if (ai == LONG_MAX || later_better(b, acc)) { acc = b; ai = ${"in_idx[p]" if idx == "load" else j}; }
% else:
            acc = combine(acc, b);
% endif
</%def>\
<%def name="store(o, value)">\
% if out_cast in ("half", "bfloat16"):
        ${cl.module.store(out_cast, "out", f"out_off + {o}", value)};
% elif out_cast == "bool":
        out[out_off + ${o}] = (uchar)((${value}) != 0);
% else:
        out[out_off + ${o}] = (${out_ctype})(${value});
% endif
</%def>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

% if with_idx:
inline int better(ACC b, long ib, ACC a, long ia) { return ${BETTER}; }
inline int later_better(ACC b, ACC a) { return ${LATER_BETTER}; }
% else:
inline ACC combine(ACC a, ACC b) { return ${combine}; }
% endif
% if vec > 1:
#define VACC ${VACC}${vec}
inline VACC vcombine(VACC a, VACC b) { return ${vcombine}; }
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
    __global ${out_ctype} *out, IDX out_off
% if with_idx:
    , __global long *out_idx, IDX idx_off
% endif
% if layout == "tree":
%   if with_idx:
    , __local long *lidx
%   endif
    , __local ACC *lval
% endif
    )
{
% if layout == "loop":
    const IDX g = get_global_id(1);
    const IDX m = get_global_id(0)${f" * {vec * unroll}" if axis == "col" else ""};
    if (m >= M)
        return;
${outer_base("m")}\
    const IDX end = min(K, (g + 1) * chunk);
    IDX j = g * chunk;
%   if axis == "col":
    // UNROLL x VEC neighbouring outputs (kept stride 1; the launcher checked they share a row) in vector lanes:
    // several vectors per row make each row's read a long contiguous run
%     for u in range(unroll):
    VACC v${u} = (VACC)(${videntity});
%     endfor
    for (; j < end; j++) {
${inner_addr("j")}\
%     for u in range(unroll):
        v${u} = vcombine(v${u}, ${vload(f"p + {u * vec}")});
%     endfor
    }
    const IDX o = g * M + m;
%     for u in range(unroll):
%       for k in range(vec):
${store(f"o + {u * vec + k}", lane(f"v{u}", k))}\
%       endfor
%     endfor
%   else:
    ACC acc = ${identity};
%     if with_idx:
    long ai = LONG_MAX;
%     endif
%     if axis == "row":
    // lane k adds elements j + k, j + k + VEC, ...: chunk is a multiple of VEC, inner stride is 1
    VACC v = (VACC)(${videntity});
    for (; j + ${vec} <= end; j += ${vec})
        v = vcombine(v, ${vload("base + j")});
%       for k in range(vec):
    acc = combine(acc, ${lane("v", k)});
%       endfor
%     endif
    for (; j < end; j++) {
${inner_addr("j")}\
${accumulate("j")}\
    }
    const IDX o = g * M + m;
${store("o", "acc")}\
%     if with_idx:
    out_idx[idx_off + o] = ai;
%     endif
%   endif
% else:
    const IDX m = get_global_id(0);
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int LX = get_local_size(0), LY = get_local_size(1);
    const IDX g = get_group_id(1);
    ACC acc = ${identity};
%   if with_idx:
    long ai = LONG_MAX;
%   endif
    // work-items past M still take part in the barriers below, with the identity
    if (m < M) {
${outer_base("m")}\
        const IDX end = min(K, (g + 1) * chunk);
        for (IDX j = g * chunk + ly; j < end; j += LY) {
${inner_addr("j")}\
${accumulate("j")}\
        }
    }
    const int slot = ly * LX + lx;
    lval[slot] = acc;
%   if with_idx:
    lidx[slot] = ai;
%   endif
    // pairwise tree over the LY partial results; reads [s, 2s) and writes [0, s) never overlap
    for (int s = LY >> 1; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (ly < s) {
            ACC b = lval[slot + s * LX];
%   if with_idx:
            long ib = lidx[slot + s * LX];
            if (better(b, ib, acc, ai)) { acc = b; ai = ib; }
            lval[slot] = acc;
            lidx[slot] = ai;
%   else:
            acc = combine(acc, b);
            lval[slot] = acc;
%   endif
        }
    }
    if (ly == 0 && m < M) {
        const IDX o = g * M + m;
${store("o", "acc")}\
%   if with_idx:
        out_idx[idx_off + o] = ai;
%   endif
    }
% endif
}
