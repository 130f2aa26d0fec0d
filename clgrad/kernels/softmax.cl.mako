## Row-wise softmax family: softmax / log_softmax and their backward passes, fused per row.
## A row is the K elements along the softmax dim; the other dims (coalesced by the launcher, ``nd`` of
## them, each with a stride per operand) number the rows. Every operand may have any layout.
##
## Forward: one pass computes the row's max m and s = sum(exp(x - m)) online (s is rescaled whenever m
## grows), a second pass writes exp(x - m) / s or (x - m) - log(s). (Measured on PoCL, 4096x1000: this
## beats torch's three passes (max, sum, write) by 10-30%.) A +inf max makes the row NaN, as in torch.
## Backward: one pass sums g*y (softmax) or g (log_softmax), a second writes y * (g - s) or g - exp(y) * s.
##
## ``group``: one work-group per row, work-items striding over it and a tree in __local memory merging
## their partial results (long rows); otherwise one work-item per row (short rows, or many rows whose
## neighbouring work-items then read neighbouring addresses when the softmax dim is not the last).
<%
  fwd = mode in ("softmax", "log_softmax")
  names = [b for b, _ in ins] + ["out"]
  def load(buf, ctype, addr):
      return f"(ACC)vload_half({addr}, {buf})" if ctype == "half" else f"(ACC){buf}[{addr}]"
  def at(buf, k):
      return f"{buf}_p + {k} * {buf}_ks"
  def store(value, k):
      addr = at("out", k)
      if out_ctype == "half":
          return f"vstore_half_rte((float)({value}), {addr}, out)"
      return f"out[{addr}] = ({out_ctype})({value})"
  x = ins[0]
%>\
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
#define ACC ${acc}
#define IDX ${idx_t}

% if fwd:
// (m, s): running max and sum of exp(v - m). -inf elements add nothing; a NaN makes s NaN for good.
inline void push(ACC *m, ACC *s, ACC v) {
    if (v > *m) { *s = *s * exp(*m - v) + (ACC)1; *m = v; }
    else if (v > -INFINITY) *s += exp(v - *m);
    else if (isnan(v)) *s = v;
}
inline void merge(ACC *m, ACC *s, ACC m2, ACC s2) {
    if (m2 > *m) { *s = *s * exp(*m - m2) + s2; *m = m2; }
    else if (m2 > -INFINITY || isnan(s2)) *s += s2 * exp(m2 - *m);
}
% endif

__kernel void ${name}(
% for buf, ctype in ins:
    __global const ${ctype} *${buf}, IDX ${buf}_off, IDX ${buf}_ks,
% endfor
    __global ${out_ctype} *out, IDX out_off, IDX out_ks,
% for d in range(nd):
    IDX n${d}, ${", ".join(f"IDX {b}_s{d}" for b in names)},
% endfor
% if group:
    IDX R, IDX K, __local ACC *lm, __local ACC *ls)
% else:
    IDX R, IDX K)
% endif
{
% if group:
    const IDX r = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
% else:
    const IDX r = get_global_id(0);
    const int lid = 0, L = 1;
    if (r >= R) return;
% endif
% for b in names:
    IDX ${b}_p = ${b}_off;
% endfor
    IDX rem = r;
% for d in reversed(range(nd)):
    {
        const IDX c = ${"rem" if d == 0 else f"rem % n{d}"};
%   for b in names:
        ${b}_p += c * ${b}_s${d};
%   endfor
%   if d:
        rem /= n${d};
%   endif
    }
% endfor

% if fwd:
    ACC m = -INFINITY, s = 0;
    for (IDX k = lid; k < K; k += L) push(&m, &s, ${load(x[0], x[1], at(x[0], "k"))});
% else:
    ACC s = 0;
    for (IDX k = lid; k < K; k += L) {
%   if mode == "softmax_backward":
        s += ${load("g", ins[0][1], at("g", "k"))} * ${load("y", ins[1][1], at("y", "k"))};
%   else:
        s += ${load("g", ins[0][1], at("g", "k"))};
%   endif
    }
% endif
% if group:
    // pairwise tree: at step h the work-items below h read [h, 2h) and write [0, h)
% if fwd:
    lm[lid] = m;
% endif
    ls[lid] = s;
    for (int h = L >> 1; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h) {
% if fwd:
            merge(&m, &s, lm[lid + h], ls[lid + h]);
            lm[lid] = m;
% else:
            s += ls[lid + h];
% endif
            ls[lid] = s;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
% if fwd:
    m = lm[0];
% endif
    s = ls[0];
% endif

% if mode == "softmax":
    // torch subtracts the max first: a +inf max makes every element NaN
    const ACC inv = m == INFINITY ? (ACC)NAN : (ACC)1 / s;
    for (IDX k = lid; k < K; k += L) ${store(f"exp({load(x[0], x[1], at(x[0], 'k'))} - m) * inv", "k")};
% elif mode == "log_softmax":
    const ACC lse = m == INFINITY ? (ACC)NAN : log(s);
    for (IDX k = lid; k < K; k += L) ${store(f"({load(x[0], x[1], at(x[0], 'k'))} - m) - lse", "k")};
% elif mode == "softmax_backward":
    for (IDX k = lid; k < K; k += L) {
        const ACC yv = ${load("y", ins[1][1], at("y", "k"))};
        ${store(f"yv * ({load('g', ins[0][1], at('g', 'k'))} - s)", "k")};
    }
% else:
    for (IDX k = lid; k < K; k += L) {
        const ACC yv = ${load("y", ins[1][1], at("y", "k"))};
        ${store(f"{load('g', ins[0][1], at('g', 'k'))} - exp(yv) * s", "k")};
    }
% endif
}
