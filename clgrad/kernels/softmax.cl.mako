## Row-wise kernels: softmax / log_softmax and their backward passes, and the fused cross-entropy (log_softmax
## and nll in one pass, and its backward in one kernel), plus nll_loss's backward. A row is the K elements along
## the softmax dim (the class dim for the losses); the other dims (coalesced by the launcher, ``nd`` of them,
## each with a stride per operand) number the rows. Every operand may have any layout: per-row operands
## (target, weights, lse, loss, grad) come as views expanded along the row (stride ``_ks`` 0), so one pointer
## walk serves all of them.
##
## Forward (softmax, log_softmax, xent): one pass computes the row's max m and s = sum(exp(x - m)) online (s is
## rescaled whenever m grows), then softmax and log_softmax write exp(x - m) / s or (x - m) - log(s); xent writes
## the row's loss -w[t] * ((x[t] - m) - log(s)), its weight w[t] and lse = m + log(s) for the backward. A +inf
## max makes the row NaN, as in torch. A target outside [0, K) (other than ignore_index) sets *flag.
## Backward: softmax / log_softmax sum g*y or g, then write y * (g - s) or g - exp(y) * s. xent_backward writes
## c * (exp(x - lse) - [k == t]) and nll_backward -c * [k == t], with c = w[t] * g (/ total for a mean), 0 on
## ignored rows.
##
## ``group``: one work-group per row, work-items striding over it and a tree in __local memory merging
## their partial results (long rows); otherwise one work-item per row (short rows, or many rows whose
## neighbouring work-items then read neighbouring addresses when the softmax dim is not the last).
##
## ``vec`` > 1 (CPU devices, x's and out's rows contiguous, no conversions): one work-item per row in explicit
## ``vec``-wide vectors, in passes over the row (max, sum, write) that re-read it from cache. PoCL does not
## vectorize the online update's branches (4096x1000: 15 ms scalar, 1.8 ms in vectors).
## The max ignores NaN (fmax), but a NaN still reaches the sum, so the row comes out NaN as in torch.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  stats = mode in ("softmax", "log_softmax", "xent")  # modes that need the row's max and sum
  loss = mode in ("xent", "xent_backward", "nll_backward")
  ctypes = dict(ins + outs)
  if weighted:
      ctypes["w"] = ctypes["x"]  # the class weight has the input's dtype (checked by nll_loss)
  names = [b for b, _ in ins + outs]
  def load(buf, addr):
      return cl.module.load(ctypes[buf], buf, addr, to="ACC")
  def at(buf, k):
      return f"{buf}_p + {k} * {buf}_ks"
  def ld(buf, k="k"):
      return load(buf, at(buf, k))
  def row(buf):
      return load(buf, f"{buf}_p")
  def store(buf, value, k="k"):
      return cl.module.store(ctypes[buf], buf, at(buf, k), value)
  lanes = "0123456789abcdef"[:vec]
  def vld(buf, k="k"):
      return f"vload{vec}(0, {buf} + {buf}_p + {k})"
  def vst(value, k="k"):
      return f"vstore{vec}({value}, 0, out + out_p + {k})"
  def hsum(v):
      return " + ".join(f"{v}.s{c}" for c in lanes)
  def hmax(v):
      terms = [f"{v}.s{c}" for c in lanes]
      while len(terms) > 1:
          terms = [f"fmax({a}, {b})" for a, b in zip(terms[::2], terms[1::2])]
      return terms[0]
%>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}
% if vec > 1:
#define VACC ${acc}${vec}
% endif

% if stats:
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
% for buf, ctype in outs:
    __global ${ctype} *${buf}, IDX ${buf}_off, IDX ${buf}_ks,
% endfor
% for d in range(nd):
    IDX n${d}, ${", ".join(f"IDX {b}_s{d}" for b in names)},
% endfor
% if loss:
    long ignore_index,
% endif
% if weighted:
    __global const ${ctypes["w"]} *w, IDX w_off, IDX w_s,
% endif
% if mode == "xent":
    volatile __global int *flag,
% endif
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
    IDX k;

## ---- the row's statistics ----
% if stats and vec > 1:
    VACC vm = (VACC)(-INFINITY);
    for (k = 0; k + ${vec} <= K; k += ${vec}) vm = fmax(vm, ${vld("x")});
    ACC m = ${hmax("vm")};
    for (; k < K; k++) m = fmax(m, x[x_p + k]);
    VACC vs = (VACC)(0);
    for (k = 0; k + ${vec} <= K; k += ${vec}) vs += exp(${vld("x")} - m);
    ACC s = ${hsum("vs")};
    for (; k < K; k++) s += exp(x[x_p + k] - m);
% elif stats:
    ACC m = -INFINITY, s = 0;
    for (k = lid; k < K; k += L) push(&m, &s, ${ld("x")});
% elif mode in ("softmax_backward", "log_softmax_backward") and vec > 1:
    VACC vs = (VACC)(0);
    for (k = 0; k + ${vec} <= K; k += ${vec}) vs += ${vld("g")}${f" * {vld('y')}" if mode == "softmax_backward" else ""};
    ACC s = ${hsum("vs")};
    for (; k < K; k++) s += g[g_p + k]${" * y[y_p + k]" if mode == "softmax_backward" else ""};
% elif mode in ("softmax_backward", "log_softmax_backward"):
    ACC s = 0;
    for (k = lid; k < K; k += L) s += ${ld("g")}${f" * {ld('y')}" if mode == "softmax_backward" else ""};
% endif
% if group and mode not in ("xent_backward", "nll_backward"):
    // pairwise tree: at step h the work-items below h read [h, 2h) and write [0, h)
%   if stats:
    lm[lid] = m;
%   endif
    ls[lid] = s;
    for (int h = L >> 1; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < h) {
%   if stats:
            merge(&m, &s, lm[lid + h], ls[lid + h]);
            lm[lid] = m;
%   else:
            s += ls[lid + h];
%   endif
            ls[lid] = s;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
%   if stats:
    m = lm[0];
%   endif
    s = ls[0];
% endif

## ---- the writes ----
% if loss:
    const long tc = (long)t[t_p];
    const int hit = tc != ignore_index && tc >= 0 && tc < K;  // the row's target column, if any
% endif
% if mode == "softmax":
    // torch subtracts the max first: a +inf max makes every element NaN
    const ACC inv = m == INFINITY ? (ACC)NAN : (ACC)1 / s;
%   if vec > 1:
    for (k = 0; k + ${vec} <= K; k += ${vec}) ${vst(f"exp({vld('x')} - m) * inv")};
    for (; k < K; k++) out[out_p + k] = exp(x[x_p + k] - m) * inv;
%   else:
    for (k = lid; k < K; k += L) ${store("out", f"exp({ld('x')} - m) * inv")};
%   endif
% elif mode == "log_softmax":
    const ACC lse = m == INFINITY ? (ACC)NAN : log(s);
%   if vec > 1:
    for (k = 0; k + ${vec} <= K; k += ${vec}) ${vst(f"({vld('x')} - m) - lse")};
    for (; k < K; k++) out[out_p + k] = (x[x_p + k] - m) - lse;
%   else:
    for (k = lid; k < K; k += L) ${store("out", f"({ld('x')} - m) - lse")};
%   endif
% elif mode == "softmax_backward":
%   if vec > 1:
    for (k = 0; k + ${vec} <= K; k += ${vec}) ${vst(f"{vld('y')} * ({vld('g')} - s)")};
    for (; k < K; k++) out[out_p + k] = y[y_p + k] * (g[g_p + k] - s);
%   else:
    for (k = lid; k < K; k += L) ${store("out", f"{ld('y')} * ({ld('g')} - s)")};
%   endif
% elif mode == "log_softmax_backward":
%   if vec > 1:
    for (k = 0; k + ${vec} <= K; k += ${vec}) ${vst(f"{vld('g')} - exp({vld('y')}) * s")};
    for (; k < K; k++) out[out_p + k] = g[g_p + k] - exp(y[y_p + k]) * s;
%   else:
    for (k = lid; k < K; k += L) ${store("out", f"{ld('g')} - exp({ld('y')}) * s")};
%   endif
% elif mode == "xent":
    if (lid == 0) {
        const ACC logs = m == INFINITY ? (ACC)NAN : log(s);
        ACC l = 0, wv = 0;
        if (tc != ignore_index) {
            if (tc < 0 || tc >= K) {
                atomic_or(flag, 1);
            } else {
                wv = ${load("w", "w_off + tc * w_s") if weighted else "(ACC)1"};
                l = -wv * ((${ld("x", "tc")} - m) - logs);
            }
        }
        ${store("out", "l", "0")};
        ${store("wt", "wv", "0")};
        ${store("lse", "m + logs", "0")};
    }
% else:
    // c: this row's share of the incoming gradient; ignored rows get none (even when the mean's total is 0)
    const ACC c = tc == ignore_index ? (ACC)0 : ${row("wt")} * ${f"({row('g')} / {row('total')})" if mean else row("g")};
%   if mode == "xent_backward":
    const ACC lz = ${row("lse")};
%     if vec > 1:
    for (k = 0; k + ${vec} <= K; k += ${vec}) ${vst(f"c * exp({vld('x')} - lz)")};
    for (; k < K; k++) out[out_p + k] = c * exp(x[x_p + k] - lz);
    if (hit) out[out_p + tc] = c * (exp(x[x_p + tc] - lz) - (ACC)1);
%     else:
    for (k = lid; k < K; k += L) ${store("out", f"c * (exp({ld('x')} - lz) - (ACC)(hit && k == tc))")};
%     endif
%   else:
    for (k = lid; k < K; k += L) ${store("out", "hit && k == tc ? -c : (ACC)0")};
%   endif
% endif
}
