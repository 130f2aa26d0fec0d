## One LSTM time step as one kernel each way (``nn.LSTM``'s sequence node; the composed form takes 3 launches
## forward and 8 backward per step). One work-item per element e = (n, j) of the [N, H] state, on an (H, N) grid
## (indices affine in j, so PoCL vectorizes across j: with one flat index divided by H it ran 9x slower); the gate rows
## pre[n] = [i | f | g | o] are 4H wide. Each statement is the expression of one elementwise table op (passed in
## ``ops`` from registry/elementwise.py, over its operands a, b, c, d), in the composed form's order, so both round alike.
## All tensors are contiguous; the launcher passes an offset per buffer.
<%namespace name="cl" file="prelude.cl.mako"/>\
<% opmap = dict(ops) %>\
${cl.header(fp64, idx_t)}\
#define T ${ctype}
<% vt = "V" if mode in ("seq_forward", "seq_backward") else "T" %>\
## one table op into a new variable: scalars of T, or the sequence kernels' 16-wide vectors V
<%def name="apply(var, name, *operands)">\
    ${vt} ${var};
    {
% for k, v in enumerate(operands):
        const ${vt} ${"abcd"[k]} = ${v};
% endfor
        ${var} = ${opmap[name].replace("(T)", f"({vt})")};
    }
</%def>
% if mode in ("seq_forward", "seq_backward"):
## CPU devices, hidden size a multiple of 16: a whole LSTM step with its recurrent product in one launch. Work-item
## (x, y) owns rows y*R .. y*R + R-1 (clamped at N - 1: their loads repeat the last row, their stores are skipped) and
## the 16 columns j0 = 16x .. of each gate, in 16-wide vectors: PoCL runs a loop over K in one work-item scalar
## unless the work-item's own code is vector code. The product sums k in order like the matmul kernel's, then the
## ops' expressions in the composed form's order. One launch instead of a product and a step kernel (on PoCL, AMD
## EPYC, [32, 128] x [128, 512] and the gates: 26 us against ~62).
<% rows = context.get("rows", 1) %>\
#define V ${ctype}16
% if mode == "seq_forward":
// pre = gi + (h W^T + b); c' = sig(f) c + sig(i) tanh(g); h' = sig(o) tanh(c'), with W^T [H, 4H] contiguous
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void ${name}(__global const T *gi, IDX gi_off, __global const T *hp, IDX hp_off, __global const T *wt, IDX wt_off,
% if bias:
             __global const T *bias, IDX b_off,
% endif
             __global const T *cp, IDX cp_off, __global T *pre, IDX pre_off, __global T *cs, IDX cs_off,
             __global T *hs, IDX hs_off, IDX H, IDX N)
{
    const IDX j0 = (IDX)get_global_id(0) * 16, n0 = (IDX)get_global_id(1) * ${rows}, H4 = 4 * H;
% for r in range(rows):
    const IDX row${r} = min(n0 + ${r}, N - 1);
    V ai${r} = 0, af${r} = 0, ag${r} = 0, ao${r} = 0;
% endfor
    for (IDX k = 0; k < H; ++k) {
        const __global T *w = wt + wt_off + k * H4 + j0;
        const V wi = vload16(0, w), wf = vload16(0, w + H), wg = vload16(0, w + 2 * H), wo = vload16(0, w + 3 * H);
% for r in range(rows):
        { const T hv = hp[hp_off + row${r} * H + k]; ai${r} += hv * wi; af${r} += hv * wf; ag${r} += hv * wg; ao${r} += hv * wo; }
% endfor
    }
% for r in range(rows):
    if (n0 + ${r} < N) {
        const IDX r4 = row${r} * H4 + j0, e = row${r} * H + j0;
% for k, gate in enumerate("ifgo"):
${apply(gate, "rnn_pre", f"vload16(0, gi + gi_off + r4 + {k} * H)", f"a{gate}{r}", f"vload16(0, bias + b_off + {k} * H + j0)" if bias else "(V)0")}\
        vstore16(${gate}, 0, pre + pre_off + r4 + ${k} * H);
% endfor
${apply("cn", "lstm_c", "i", "f", "g", "vload16(0, cp + cp_off + e)")}\
        vstore16(cn, 0, cs + cs_off + e);
${apply("hn", "lstm_h", "o", "cn")}\
        vstore16(hn, 0, hs + hs_off + e);
    }
% endfor
}
% else:
// dh = gh + dpre_next W (W [4H, H] contiguous; no product when has_next is 0), then the gates' gradients as the
// step kernel below; dcn is read and overwritten with dc_prev, element by element
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void ${name}(__global const T *gh, IDX gh_off, __global const T *dnext, IDX dnext_off, int has_next,
             __global const T *w, IDX w_off, __global const T *gc, IDX gc_off, __global T *dcn, IDX dcn_off,
             __global const T *pre, IDX pre_off, __global const T *cs, IDX cs_off, __global const T *cp, IDX cp_off,
             __global T *dpre, IDX dpre_off, IDX H, IDX N)
{
    const IDX j0 = (IDX)get_global_id(0) * 16, n0 = (IDX)get_global_id(1) * ${rows}, H4 = 4 * H;
% for r in range(rows):
    const IDX row${r} = min(n0 + ${r}, N - 1);
    V acc${r} = 0;
% endfor
    if (has_next) {
        for (IDX k = 0; k < H4; ++k) {
            const V wv = vload16(0, w + w_off + k * H + j0);
% for r in range(rows):
            acc${r} += dnext[dnext_off + row${r} * H4 + k] * wv;
% endfor
        }
    }
% for r in range(rows):
    if (n0 + ${r} < N) {
        const IDX r4 = row${r} * H4 + j0, e = row${r} * H + j0;
        const V i = vload16(0, pre + pre_off + r4), f = vload16(0, pre + pre_off + r4 + H);
        const V g = vload16(0, pre + pre_off + r4 + 2 * H), o = vload16(0, pre + pre_off + r4 + 3 * H);
        const V ct = vload16(0, cs + cs_off + e), cprev = vload16(0, cp + cp_off + e);
        const V ghv = vload16(0, gh + gh_off + e);
        const V dh = has_next ? ghv + acc${r} : ghv;  // the composed form: grad_h + dpre_next @ W
${apply("dov", "lstm_do", "dh", "ct", "o")}\
${apply("dcin", "add", "vload16(0, gc + gc_off + e)", "vload16(0, dcn + dcn_off + e)")}\
${apply("dc", "lstm_dc", "dcin", "dh", "o", "ct")}\
${apply("di", "lstm_di", "dc", "g", "i")}\
${apply("df", "lstm_df", "dc", "cprev", "f")}\
${apply("dg", "lstm_dg", "dc", "i", "g")}\
${apply("dcprev", "lstm_dcprev", "dc", "f")}\
        vstore16(di, 0, dpre + dpre_off + r4);
        vstore16(df, 0, dpre + dpre_off + r4 + H);
        vstore16(dg, 0, dpre + dpre_off + r4 + 2 * H);
        vstore16(dov, 0, dpre + dpre_off + r4 + 3 * H);
        vstore16(dcprev, 0, dcn + dcn_off + e);
    }
% endfor
}
% endif
% elif mode == "forward":
// pre = gi + (h W^T + b); c' = sig(f) c + sig(i) tanh(g); h' = sig(o) tanh(c')
__kernel void ${name}(__global const T *gi, IDX gi_off, __global const T *hw, IDX hw_off,
% if bias:
                      __global const T *bias, IDX b_off,
% endif
                      __global const T *cp, IDX cp_off, __global T *pre, IDX pre_off, __global T *cs, IDX cs_off,
                      __global T *hs, IDX hs_off, IDX H, IDX NH)
{
    const IDX j = get_global_id(0), n = get_global_id(1), e = n * H + j, r = n * 4 * H + j;
% for k, gate in enumerate("ifgo"):
${apply(gate, "rnn_pre", f"gi[gi_off + r + {k} * H]", f"hw[hw_off + r + {k} * H]", f"bias[b_off + {k} * H + j]" if bias else "(T)0")}\
    pre[pre_off + r + ${k} * H] = ${gate};
% endfor
${apply("cn", "lstm_c", "i", "f", "g", "cp[cp_off + e]")}\
    cs[cs_off + e] = cn;
${apply("hn", "lstm_h", "o", "cn")}\
    hs[hs_off + e] = hn;
}
% else:
// the gates' gradients from dh = gh + dh_next and dc = lstm_dc(gc + dc_next, ...); dc_prev = dc sig(f)
## carry=False (a lone cell step, LSTMCell's node): no gradients from a next step, dh = gh and dc_in = gc
<% carry = context.get("carry", True) %>\
__kernel void ${name}(__global const T *gh, IDX gh_off,${" __global const T *dhn, IDX dhn_off," if carry else ""}
                      __global const T *gc, IDX gc_off,${" __global const T *dcn, IDX dcn_off," if carry else ""}
                      __global const T *pre, IDX pre_off, __global const T *cs, IDX cs_off,
                      __global const T *cp, IDX cp_off, __global T *dpre, IDX dpre_off,
                      __global T *dcp, IDX dcp_off, IDX H, IDX NH)
{
    const IDX j = get_global_id(0), n = get_global_id(1), e = n * H + j, r = n * 4 * H + j;
    const T i = pre[pre_off + r], f = pre[pre_off + r + H], g = pre[pre_off + r + 2 * H], o = pre[pre_off + r + 3 * H];
    const T ct = cs[cs_off + e];
% if carry:
${apply("dh", "add", "gh[gh_off + e]", "dhn[dhn_off + e]")}\
% else:
    const T dh = gh[gh_off + e];
% endif
${apply("dov", "lstm_do", "dh", "ct", "o")}\
% if carry:
${apply("dcin", "add", "gc[gc_off + e]", "dcn[dcn_off + e]")}\
% else:
    const T dcin = gc[gc_off + e];
% endif
${apply("dc", "lstm_dc", "dcin", "dh", "o", "ct")}\
${apply("di", "lstm_di", "dc", "g", "i")}\
${apply("df", "lstm_df", "dc", "cp[cp_off + e]", "f")}\
${apply("dg", "lstm_dg", "dc", "i", "g")}\
${apply("dcprev", "lstm_dcprev", "dc", "f")}\
    dpre[dpre_off + r] = di;
    dpre[dpre_off + r + H] = df;
    dpre[dpre_off + r + 2 * H] = dg;
    dpre[dpre_off + r + 3 * H] = dov;
    dcp[dcp_off + e] = dcprev;
}
% endif
