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
<%def name="apply(var, name, *operands)">\
    T ${var};
    {
% for k, v in enumerate(operands):
        const T ${"abcd"[k]} = ${v};
% endfor
        ${var} = ${opmap[name]};
    }
</%def>

% if mode == "forward":
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
