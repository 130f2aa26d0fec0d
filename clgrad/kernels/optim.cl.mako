## Fused optimizer updates: one work-item per parameter element updates the parameter and its state in one
## launch (the composed form takes 6-9 elementwise launches per parameter). Each line mirrors one of
## PyTorch's single-tensor ops in its order, rounding to T after each as the composed ops do, and
## FP_CONTRACT is off so the compiler does not fuse a multiply and an add into a differently rounded fma.
## All tensors are contiguous with the parameter's dtype T (float or double); p and g carry offsets.
## ``err``: the launching thread's error buffer of deferred device-side checks (pending.py): while its word 0 is set
## (a bounds check of this step's forward failed and was not reported yet) the step changes nothing.
<%namespace name="cl" file="prelude.cl.mako"/>\
${cl.header(fp64, idx_t)}\
#pragma OPENCL FP_CONTRACT OFF
#define T ${ctype}

% if kind == "adam":
__kernel void ${name}(
    __global T *p, IDX p_off, __global const T *g, IDX g_off, __global T *m, IDX m_off, __global T *v, IDX v_off,
%   if amsgrad:
    __global T *vmax, IDX vmax_off,
%   endif
    T lr, T w1, T beta2, T w2, T eps, T wd, T shrink, T step_size, T bc2_sqrt, IDX n, __global const int *err)
{
    const IDX i = get_global_id(0);
    if ((i < n) & (err[0] == 0)) {  // a block, not an early return: PoCL then vectorizes the update
        T grad = g[g_off + i];
%   if maximize:
        grad = -grad;
%   endif
        T param = p[p_off + i];
%   if decay == "l2":
        grad = grad + wd * param;
%   elif decay == "decoupled":
        param = param * shrink;
%   endif
        T ma = m[m_off + i];
        ma = fabs(w1) < (T)0.5 ? ma + w1 * (grad - ma) : grad + (w1 - (T)1) * (grad - ma);  /* lerp_ */
        m[m_off + i] = ma;
        T va = v[v_off + i] * beta2;
        va = va + w2 * grad * grad;  /* addcmul_ */
        v[v_off + i] = va;
%   if amsgrad:
        const T old = vmax[vmax_off + i];
        va = (old > va || isnan(old)) ? old : va;  /* torch.maximum: a NaN propagates (fmax would drop it) */
        vmax[vmax_off + i] = va;
%   endif
        T denom = sqrt(va) / bc2_sqrt;
        denom = denom + eps;
        p[p_off + i] = param + step_size * ma / denom;  /* addcdiv_ with value = -lr / bias_correction1 */
    }
}
% elif kind == "sgd":
__kernel void ${name}(
    __global T *p, IDX p_off, __global const T *g, IDX g_off,
%   if momentum:
    __global T *buf, IDX buf_off,
%   endif
    T lr, T wd, T mom, T damp, IDX n, __global const int *err)
{
    const IDX i = get_global_id(0);
    if ((i < n) & (err[0] == 0)) {  // a block, not an early return: PoCL then vectorizes the update
        T grad = g[g_off + i];
%   if maximize:
        grad = -grad;
%   endif
        const T param = p[p_off + i];
%   if weight_decay:
        grad = grad + wd * param;
%   endif
%   if momentum:
%     if first:
        T b = grad;  /* the buffer starts as a copy of the gradient */
%     else:
        T b = buf[buf_off + i] * mom;
        b = b + damp * grad;
%     endif
        buf[buf_off + i] = b;
%     if nesterov:
        grad = grad + mom * b;
%     else:
        grad = b;
%     endif
%   endif
        p[p_off + i] = param + lr * grad;  /* add_ with alpha = -lr */
    }
}
% endif
