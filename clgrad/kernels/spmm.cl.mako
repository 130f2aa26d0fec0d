## Sparse @ dense (SpMM) on a CSR matrix: out[r, j] = sum over k in [rowptr[r], rowptr[r + 1]) of
## vals[k] * dense[cols[k], j]. One work-item per output element (r, j): neighbouring work-items share a row and read
## neighbouring columns of dense, and each sums its row's entries in k order, so the result is deterministic (no
## atomics). The accumulator ``acc`` is float for half storage, else the element type (integers wrap in their width).
## The kernel never reads outside its buffers, whatever the indices: a row's range is clamped to [0, nnz) and a
## column outside [0, K) is skipped (the ops layer checks indices against the size when a tensor is built).
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  def load(buf, addr):
      return cl.module.load(ctype, buf, addr, to="ACC")
%>\
${cl.header(fp64, idx_t)}\
#define ACC ${acc}

__kernel void ${name}(__global ${ctype} *out, IDX out_off, IDX os0, IDX os1,
                      __global const ${ptr_ctype} *rowptr, IDX ptr_off, IDX ptr_st,
                      __global const ${col_ctype} *cols, IDX col_off, IDX col_st,
                      __global const ${ctype} *vals, IDX val_off, IDX val_st,
                      __global const ${ctype} *dense, IDX d_off, IDX ds0, IDX ds1,
                      IDX M, IDX N, IDX K, IDX nnz)
{
    const IDX i = get_global_id(0);
    if (i >= M * N) return;
    const IDX r = i / N, j = i - r * N;
    const long first = (long)rowptr[ptr_off + r * ptr_st], last = (long)rowptr[ptr_off + (r + 1) * ptr_st];
    const IDX start = (IDX)max(first, 0L), end = (IDX)min(last, (long)nnz);
    ACC acc = 0;
    for (IDX k = start; k < end; ++k) {
        // compared in the column's own type, inside an if: with the column widened to long and a ``continue``,
        // llvmpipe (Mesa 22) skipped no negative int32 column
        const ${col_ctype} c = cols[col_off + k * col_st];
        if (c >= 0 && c < K) {
            acc += ${load("vals", "val_off + k * val_st")} * ${load("dense", "d_off + (IDX)c * ds0 + j * ds1")};
        }
    }
    ${cl.module.store(ctype, "out", "out_off + r * os0 + j * os1", "acc")};
}
