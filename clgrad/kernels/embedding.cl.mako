## Embedding rows: ``gather`` (forward) and ``accumulate`` (backward), one work-item per (index n, column d).
##   gather:     out[n, d] = w[idx[n], d]; an index outside [0, V) sets *flag (atomically) and writes 0.
##   accumulate: acc[idx[n], d] += g[n, d] unless idx[n] == pad. Duplicate indices meet in one row, so the
##               add is an atomic compare-and-swap loop on the value's bits: correct for any number of
##               duplicates, but the order of the additions (hence the last bits of a float sum) is not
##               deterministic, as with atomics in PyTorch's CUDA index_add. float16 gradients accumulate in
##               a float32 buffer; float64 needs cl_khr_int64_base_atomics.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  def load(buf, ctype, addr):
      return cl.module.load(ctype, buf, addr, to="ACC")
%>\
${cl.header(fp64, idx_t, int64_atomics=kind == "accumulate" and acc == "double")}\
#define ACC ${acc}

% if kind == "gather":
__kernel void ${name}(__global const ${idx_ctype} *idx, IDX idx_off, __global const ${val_ctype} *w, IDX w_off,
                      IDX ws0, IDX ws1, __global ${val_ctype} *out, IDX N, IDX D, long V,
                      volatile __global int *flag)
{
    const IDX i = get_global_id(0);
    if (i >= N * D) return;
    const IDX n = i / D, d = i - n * D;
    const long v = (long)idx[idx_off + n];
    ACC value = 0;
    if (v < 0 || v >= V) {
        if (d == 0) atomic_or(flag, 1);
    } else {
        value = ${load("w", val_ctype, "w_off + v * ws0 + d * ws1")};
    }
    ${cl.module.store(val_ctype, "out", "i", "value")};
}
% else:
${cl.atomic_update("atomic_add_acc", acc, "a + b")}\

__kernel void ${name}(__global const ${idx_ctype} *idx, IDX idx_off, __global const ${val_ctype} *g, IDX g_off,
                      IDX gs0, IDX gs1, __global ACC *acc, IDX N, IDX D, long V, long pad)
{
    const IDX i = get_global_id(0);
    if (i >= N * D) return;
    const IDX n = i / D, d = i - n * D;
    const long v = (long)idx[idx_off + n];
    if (v == pad || v < 0 || v >= V) return;  // the forward's check reports bad indices; never write outside
    atomic_add_acc(acc + v * D + d, ${load("g", val_ctype, "g_off + n * gs0 + d * gs1")});
}
% endif
