## nll_loss pieces: one work-item per sample s (every position of the target).
##   loss[s] = -w[t] * x[s, t] and wt[s] = w[t], with t = target[s]; both 0 where t == ignore_index.
## The sample dims are coalesced by the launcher (``nd`` of them, strides for x and target); x's class
## dim has stride x_cs. loss and wt are contiguous. A target outside [0, C) sets *flag (an atomic, so
## concurrent writers never race); the host reads that one int and raises PyTorch's IndexError.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  def load(buf, ctype, addr):
      return cl.module.load(ctype, buf, addr, to="ACC")
  def store(buf, value):
      return cl.module.store(out_ctype, buf, "i", value)
%>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

__kernel void ${name}(
    __global const ${in_ctype} *x, IDX x_off, IDX x_cs,
    __global const ${t_ctype} *t, IDX t_off,
% if weighted:
    __global const ${in_ctype} *w, IDX w_off, IDX w_s,
% endif
% for d in range(nd):
    IDX n${d}, IDX xs${d}, IDX ts${d},
% endfor
    __global ${out_ctype} *loss, __global ${out_ctype} *wt,
    long ignore_index, long C, IDX S, volatile __global int *flag)
{
    const IDX i = get_global_id(0);
    if (i >= S) return;
    IDX xp = x_off, tp = t_off, rem = i;
% for d in reversed(range(nd)):
    {
        const IDX c = ${"rem" if d == 0 else f"rem % n{d}"};
        xp += c * xs${d};
        tp += c * ts${d};
%   if d:
        rem /= n${d};
%   endif
    }
% endfor
    const long c = (long)t[tp];
    ACC l = 0, wv = 0;
    if (c != ignore_index) {
        if (c < 0 || c >= C) {
            atomic_or(flag, 1);
        } else {
% if weighted:
            wv = ${load("w", in_ctype, "w_off + c * w_s")};
% else:
            wv = 1;
% endif
            l = -wv * ${load("x", in_ctype, "xp + c * x_cs")};
        }
    }
    ${store("loss", "l")};
    ${store("wt", "wv")};
}
