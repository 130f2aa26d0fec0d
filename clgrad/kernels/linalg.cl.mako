## Jacobi methods for the symmetric eigenproblem and the SVD: one work-group per matrix of a batch, every matrix
## contiguous and overwritten in place. Both sweep the column pairs in round-robin ("chess tournament") order: a
## round pairs all N/2 disjoint (p, q) at once (N = n rounded up to even; a pair with q == n is a bye), so the
## work-items first compute every pair's rotation, then apply them all (disjoint pairs touch disjoint columns/rows),
## and a sweep is N - 1 rounds. A pair is rotated while its off-diagonal term is above eps relative to its diagonal
## (the accurate Jacobi criterion); sweeps stop when one rotates nothing, or after ``max_sweeps``. The loops have no
## ``break``: every work-item runs the same barriers, guarded by a flag all of them read after a barrier.
## kind "eigh": A [n, n] symmetric -> w (eigenvalues ascending), V (eigenvectors as columns), A' = V^T A V.
## kind "svd": one-sided (Hestenes) Jacobi on A [m, n], m >= n -> A V with orthogonal columns, s (their norms,
## descending), V; the columns are permuted with s.
## cs: a scratch of 2 * (N / 2) values per matrix (the round's cosines and sines).
## kind "getrf": unblocked LU with partial pivoting of columns k..e-1 (rows k..m-1) of A [m, c], whole rows swapped
## (LAPACK's getf2: the first largest |value| pivots, a zero pivot is skipped); piv [kmin] gets the 1-based rows.
## kind "potrf": unblocked lower Cholesky of the diagonal block A[k:e, k:e] of A [n, n] (NaN when not PD); the
## block's strict upper triangle is scratch (it gets L^T).
## kind "trsm": substitution, X with A X = B for triangular A [n, n] (lower, forward; ``upper``, backward; a unit
## diagonal not read when ``unit``), B [n, k] overwritten by X.
## All three loop over the columns inside one launch (barriers between the steps, ``wg`` work-items a power of
## two), and contraction to fma is off so that the values round as the composed ops' (ops/linalg_lu.py) do.
<%namespace name="cl" file="prelude.cl.mako"/>\
<% serial, vec = context.get("serial", False), context.get("vec", False) %>\
${cl.header(fp64, idx_t)}\
#define T ${ctype}
#define EPS ${"DBL_EPSILON" if fp64 else "FLT_EPSILON"}

// the slot-th player of round r of a round-robin over N players: player 0 stays, the others rotate
inline IDX player(IDX slot, IDX r, IDX N) { return slot == 0 ? 0 : 1 + (slot - 1 + r) % (N - 1); }

// the rotation (c, s) that zeroes the pair's off-diagonal term: Rutishauser's formula (Numerical Recipes' jacobi)
inline void rotation(T app, T aqq, T apq, __global T *c, __global T *s) {
    const T theta = (aqq - app) / (2 * apq);
    const T t = (theta >= 0 ? (T)1 : (T)-1) / (fabs(theta) + hypot(theta, (T)1));
    *c = 1 / sqrt(t * t + 1);
    *s = t * *c;
}

// columns p, q of X [rows, ld] (row-major) <- (c x_p - s x_q, s x_p + c x_q)
inline void rotate_cols(__global T *X, IDX ld, IDX k, IDX p, IDX q, T c, T s) {
    const T xp = X[k * ld + p], xq = X[k * ld + q];
    X[k * ld + p] = c * xp - s * xq;
    X[k * ld + q] = s * xp + c * xq;
}

% if kind == "eigh":
__kernel void ${name}(__global T *a_all, __global T *w_all, __global T *v_all, __global T *cs_all, IDX n,
                      int max_sweeps, int stage)
{
    const IDX g = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    __global T *A = a_all + g * n * n, *V = v_all + g * n * n, *w = w_all + g * n;
    const IDX N = n + (n & 1), P = N / 2;
    __global T *C = cs_all + g * 2 * P, *S = C + P;
    __local int rotated;
    if (stage & 1) {  // the first launch of a factorization: V = I (later launches continue the sweeps)
        for (IDX i = lid; i < n * n; i += L) V[i] = (i / n == i % n) ? 1 : 0;
    }
    int active = n > 1;
    for (int sweep = 0; sweep < max_sweeps; ++sweep) {
        if (active) {
            if (lid == 0) rotated = 0;
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            for (IDX r = 0; r < N - 1; ++r) {
                for (IDX i = lid; i < P; i += L) {
                    const IDX a = player(i, r, N), b = player(N - 1 - i, r, N);
                    const IDX p = min(a, b), q = max(a, b);
                    C[i] = 1; S[i] = 0;
                    if (q < n) {
                        const T app = A[p * n + p], aqq = A[q * n + q], apq = A[p * n + q];
                        if (apq != 0 && fabs(apq) > EPS * sqrt(fabs(app) * fabs(aqq))) {
                            rotation(app, aqq, apq, C + i, S + i);
                            rotated = 1;
                        }
                    }
                }
                barrier(CLK_GLOBAL_MEM_FENCE);
                for (IDX j = lid; j < P * n; j += L) {  // A <- A J, V <- V J
                    const IDX i = j / n, k = j % n;
                    const IDX a = player(i, r, N), b = player(N - 1 - i, r, N);
                    if (S[i] != 0) {
                        rotate_cols(A, n, k, min(a, b), max(a, b), C[i], S[i]);
                        rotate_cols(V, n, k, min(a, b), max(a, b), C[i], S[i]);
                    }
                }
                barrier(CLK_GLOBAL_MEM_FENCE);
                for (IDX j = lid; j < P * n; j += L) {  // A <- J^T A
                    const IDX i = j / n, k = j % n;
                    const IDX a = player(i, r, N), b = player(N - 1 - i, r, N);
                    const IDX p = min(a, b), q = max(a, b);
                    if (S[i] != 0) {
                        const T xp = A[p * n + k], xq = A[q * n + k];
                        A[p * n + k] = C[i] * xp - S[i] * xq;
                        A[q * n + k] = S[i] * xp + C[i] * xq;
                    }
                }
                barrier(CLK_GLOBAL_MEM_FENCE);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            active = rotated;
            barrier(CLK_LOCAL_MEM_FENCE);  // every work-item has read the flag before work-item 0 resets it
        }
    }
    if (!(stage & 2)) return;  // not the last launch: the sweeps continue in the next one (uniform: no barrier skipped)
    for (IDX i = lid; i < n; i += L) w[i] = A[i * n + i];
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {  // selection sort, ascending, carrying V's columns
        for (IDX i = 0; i + 1 < n; ++i) {
            IDX best = i;
            for (IDX j = i + 1; j < n; ++j) best = w[j] < w[best] ? j : best;
            if (best != i) {
                const T t = w[i]; w[i] = w[best]; w[best] = t;
                for (IDX k = 0; k < n; ++k) {
                    const T x = V[k * n + i]; V[k * n + i] = V[k * n + best]; V[k * n + best] = x;
                }
            }
        }
    }
}
% elif kind == "svd":
__kernel void ${name}(__global T *a_all, __global T *s_all, __global T *v_all, __global T *cs_all, IDX m, IDX n,
                      int max_sweeps, int stage)
{
    const IDX g = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    __global T *A = a_all + g * m * n, *V = v_all + g * n * n, *s = s_all + g * n;
    const IDX N = n + (n & 1), P = N / 2;
    __global T *C = cs_all + g * 2 * P, *S = C + P;
    __local int rotated;
    if (stage & 1) {  // the first launch of a factorization: V = I (later launches continue the sweeps)
        for (IDX i = lid; i < n * n; i += L) V[i] = (i / n == i % n) ? 1 : 0;
    }
    int active = n > 1;
    for (int sweep = 0; sweep < max_sweeps; ++sweep) {
        if (active) {
            if (lid == 0) rotated = 0;
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            for (IDX r = 0; r < N - 1; ++r) {
                for (IDX i = lid; i < P; i += L) {
                    const IDX a = player(i, r, N), b = player(N - 1 - i, r, N);
                    const IDX p = min(a, b), q = max(a, b);
                    C[i] = 1; S[i] = 0;
                    if (q < n) {
                        T alpha = 0, beta = 0, gamma = 0;
                        for (IDX k = 0; k < m; ++k) {
                            const T xp = A[k * n + p], xq = A[k * n + q];
                            alpha += xp * xp; beta += xq * xq; gamma += xp * xq;
                        }
                        if (gamma != 0 && fabs(gamma) > EPS * sqrt(alpha) * sqrt(beta)) {
                            rotation(alpha, beta, gamma, C + i, S + i);
                            rotated = 1;
                        }
                    }
                }
                barrier(CLK_GLOBAL_MEM_FENCE);
                for (IDX j = lid; j < P * (m + n); j += L) {  // A <- A J and V <- V J, a row of either per item
                    const IDX i = j / (m + n), k = j % (m + n);
                    const IDX a = player(i, r, N), b = player(N - 1 - i, r, N);
                    if (S[i] != 0) {
                        if (k < m) rotate_cols(A, n, k, min(a, b), max(a, b), C[i], S[i]);
                        else rotate_cols(V, n, k - m, min(a, b), max(a, b), C[i], S[i]);
                    }
                }
                barrier(CLK_GLOBAL_MEM_FENCE);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            active = rotated;
            barrier(CLK_LOCAL_MEM_FENCE);  // every work-item has read the flag before work-item 0 resets it
        }
    }
    if (!(stage & 2)) return;  // not the last launch: the sweeps continue in the next one (uniform: no barrier skipped)
    for (IDX j = lid; j < n; j += L) {
        T acc = 0;
        for (IDX k = 0; k < m; ++k) acc += A[k * n + j] * A[k * n + j];
        s[j] = sqrt(acc);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) {  // selection sort, descending, carrying the columns of A V and of V
        for (IDX i = 0; i + 1 < n; ++i) {
            IDX best = i;
            for (IDX j = i + 1; j < n; ++j) best = s[j] > s[best] ? j : best;
            if (best != i) {
                const T t = s[i]; s[i] = s[best]; s[best] = t;
                for (IDX k = 0; k < m; ++k) {
                    const T x = A[k * n + i]; A[k * n + i] = A[k * n + best]; A[k * n + best] = x;
                }
                for (IDX k = 0; k < n; ++k) {
                    const T x = V[k * n + i]; V[k * n + i] = V[k * n + best]; V[k * n + best] = x;
                }
            }
        }
    }
}
% elif kind == "getrf":
// does |value| v at row i pivot before bv at row bi? NaN first (as argmax), then the larger, then the first row
inline int beats(T v, IDX i, T bv, IDX bi) {
    if (isnan(bv)) return isnan(v) && i < bi;
    return isnan(v) || v > bv || (v == bv && i < bi);
}

__kernel void ${name}(__global T *a_all, __global int *piv_all, IDX m, IDX c, IDX kmin, IDX k, IDX e)
{
    #pragma OPENCL FP_CONTRACT OFF
    const IDX g = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    __global T *A = a_all + g * m * c;
    __global int *piv = piv_all + g * kmin;
    __local T best_v[${wg}];
    __local IDX best_i[${wg}];
    // three barriers per column with one work-item (a CPU pays for each on every work-group): the candidates, the
    // swap, the update; with more, one to pick among the candidates
    for (IDX j = k; j < e; ++j) {
        T bv = -1;
        IDX bi = m;
        for (IDX r = j + lid; r < m; r += L) {
            const T v = fabs(A[r * c + j]);
            if (beats(v, r, bv, bi)) { bv = v; bi = r; }
        }
        best_v[lid] = bv;
        best_i[lid] = bi;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (L > 1) {  // uniform: the work-items' candidates in order, the first of equal values wins (one
                      // scan and a barrier: a tree's log2(L) barriers cost more on llvmpipe, its loop limiter
                      // counting a trip per SIMD batch of the group at each barrier)
            if (lid == 0) {
                for (IDX i = 1; i < L; ++i) {
                    if (beats(best_v[i], best_i[i], bv, bi)) { bv = best_v[i]; bi = best_i[i]; }
                }
                best_i[0] = bi;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const IDX p = best_i[0];
        const T d = A[p * c + j], old = A[j * c + j];  // column j is written only after the next barrier
        const T div = d != 0 ? d : (T)1;  // a zero pivot has a zero column below it: LAPACK skips it
        if (lid == 0) piv[j] = (int)(p + 1);
        if (p != j) {  // swap rows j and p, but for column j, which the division below writes
            for (IDX l = lid; l < c; l += L) {
                if (l != j) {
                    const T x = A[j * c + l];
                    A[j * c + l] = A[p * c + l];
                    A[p * c + l] = x;
                }
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        // a row per work-item: its multiplier (column j divided by the pivot), then its rank-1 update from the
        // pivot row, on a CPU in explicit 8-wide vectors (PoCL vectorizes across work-items, which here would gather
        // rows; the same operations per element, so the same rounding; llvmpipe's loop limiter counted more trips)
        __global const T *prow = A + j * c + j + 1;
        const IDX w = e - j - 1;
        for (IDX r = j + lid; r < m; r += L) {
            const T x = r == j ? d : (r == p ? old : A[r * c + j]) / div;
            A[r * c + j] = x;
            if (r == j) continue;
            __global T *row = A + r * c + j + 1;
            IDX l = 0;
% if vec:
            for (; l + 8 <= w; l += 8) vstore8(vload8(0, row + l) - x * vload8(0, prow + l), 0, row + l);
% endif
            for (; l < w; ++l) row[l] -= x * prow[l];
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
}
% elif kind == "potrf":
// the divided column j is also written to row j (the upper triangle is scratch), so that the update's inner loop
// reads it contiguously
__kernel void ${name}(__global T *a_all, IDX n, IDX k, IDX e)
{
    #pragma OPENCL FP_CONTRACT OFF
    const IDX g = get_group_id(0), lid = get_local_id(0), L = get_local_size(0);
    __global T *A = a_all + g * n * n;
    for (IDX j = k; j < e; ++j) {
        const T s = sqrt(A[j * n + j]);
        barrier(CLK_GLOBAL_MEM_FENCE);  // every work-item has read the diagonal before it is divided
        for (IDX r = j + lid; r < e; r += L) {
            const T t = A[r * n + j] / s;
            A[r * n + j] = t;
            A[j * n + r] = t;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (IDX r = j + 1 + lid; r < e; r += L) {  // the lower triangle of the trailing block, a row per item
            const T x = A[j * n + r];
            __global T *row = A + r * n + j + 1;
            __global const T *prow = A + j * n + j + 1;
            const IDX w = r - j;
            IDX l = 0;  // in explicit 8-wide vectors on a CPU, as getrf's update
% if vec:
            for (; l + 8 <= w; l += 8) vstore8(vload8(0, row + l) - x * vload8(0, prow + l), 0, row + l);
% endif
            for (; l < w; ++l) row[l] -= x * prow[l];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
% elif kind == "trsm":
// A strided (a transposed, broadcast or offset view is read in place: element (i, j) of matrix g at
// a_off + g a_sb + i a_sr + j a_sc); the columns of B split over work-groups of ``cols`` each (independent: each
// group does for its columns what one group would do for all, so the result does not depend on the split)
% if serial:
// a work-item per column of B (no barriers: the columns are independent), each substituting down (up) its column
// in dot-product form; neighbouring work-items read neighbouring columns and the same element of A. ``cols`` is
// the number of matrices here (the launch is rounded up to whole work-groups)
__kernel void ${name}(__global const T *l_all, __global T *b_all, IDX n, IDX k, IDX a_off, IDX a_sb, IDX a_sr,
                      IDX a_sc, IDX cols, int upper, int unit)
{
    #pragma OPENCL FP_CONTRACT OFF
    const IDX id = get_global_id(0), g = id / k, t = id % k;
    if (g >= cols) return;
    __global const T *A = l_all + a_off + g * a_sb;
    __global T *B = b_all + g * n * k + t;
    for (IDX s = 0; s < n; ++s) {
        const IDX j = upper ? n - 1 - s : s;
        const IDX lo = upper ? j + 1 : 0, hi = upper ? n : j;
        T x = B[j * k];
        for (IDX i = lo; i < hi; ++i) x -= A[j * a_sr + i * a_sc] * B[i * k];
        B[j * k] = unit ? x : x / A[j * a_sr + j * a_sc];
    }
}
% else:
__kernel void ${name}(__global const T *l_all, __global T *b_all, IDX n, IDX k, IDX a_off, IDX a_sb, IDX a_sr,
                      IDX a_sc, IDX cols, int upper, int unit)
{
    #pragma OPENCL FP_CONTRACT OFF
    const IDX blocks = (k + cols - 1) / cols;
    const IDX g = get_group_id(0) / blocks, t0 = (get_group_id(0) % blocks) * cols;
    const IDX t1 = min(k, t0 + cols), lid = get_local_id(0), L = get_local_size(0);
    __global const T *A = l_all + a_off + g * a_sb;
    __global T *B = b_all + g * n * k;
    for (IDX s = 0; s < n; ++s) {
        const IDX j = upper ? n - 1 - s : s;
        if (!unit) {  // uniform over the group: every work-item meets the barrier or none does
            const T d = A[j * a_sr + j * a_sc];
            for (IDX t = t0 + lid; t < t1; t += L) B[j * k + t] /= d;
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        const IDX lo = upper ? 0 : j + 1, hi = upper ? j : n;
        for (IDX i = lo + lid; i < hi; i += L) {  // a row per work-item: the inner loop is contiguous (SIMD)
            const T a = A[i * a_sr + j * a_sc];
            for (IDX t = t0; t < t1; ++t) B[i * k + t] -= a * B[j * k + t];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
% endif
% endif

