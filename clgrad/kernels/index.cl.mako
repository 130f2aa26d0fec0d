## Indexing kernel family: gather and put through index tensors, and the three passes of nonzero.
##
## gather / put iterate over an index space of shape n0..n{ndim-1} (coalesced by the launcher). Each operand
## (the data tensor, the gather output, the put value and every index tensor) arrives restrided over that
## space, so one address formula serves getitem, index_put, gather, scatter, index_select, index_add and
## index_fill: data address = data_off + sum(coord * ds) + sum_k(index_k * step_k).
##
## Bounds: an index below -wrap_k or at/after size_k is never dereferenced. The element is skipped (gather
## writes 0) and atomic_min records key = position * nidx + k in `flag`, so the host learns the first bad
## index in iteration order with one 4-byte read.
##
## Accumulation (mode add/mul) with duplicate indices must not lose updates. We use atomics, not a sort:
## they keep the launch single-pass and need no scratch memory, at the price of a summation order that can
## vary between runs (float results may differ in the last bits, as with PyTorch's CUDA index_add).
##   int32      atomic_add (core since OpenCL 1.1)
##   long       atom_add from cl_khr_int64_base_atomics
##   float, int (mul)  compare-and-swap on the 32-bit word (as_uint / as_float)
##   double, long (mul) compare-and-swap on 64 bits (cl_khr_int64_base_atomics)
##   1- and 2-byte types (bool, uint8, int8, int16, half): compare-and-swap on the aligned 32-bit word that
##              holds the element (buffers are allocated in multiples of 512 bytes, so the word is in bounds)
##   serial     64-bit types on a device without cl_khr_int64_base_atomics: one work-item applies every
##              update in order (slow but correct, and deterministic), over [start, n) of the index space
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  RAW = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}
  SIZE = {"uchar": 1, "char": 1, "ushort": 2, "short": 2, "half": 2, "bfloat16": 2, "uint": 4, "int": 4, "float": 4,
          "ulong": 8, "long": 8, "double": 8}
%>\
${cl.header(fp64, idx_t, int64_atomics=kind in ("gather", "put") and atomic in ("int64", "cas64"))}\
% if kind in ("gather", "put"):
<%
  half = elem in ("half", "bfloat16")  # 16-bit floats: bits in memory, float arithmetic
  compute = "float" if half else elem
  arith = mode in ("add", "mul")
  # where memory is touched as raw bits (half has no arithmetic type without cl_khr_fp16)
  mem_t = "ushort" if half else elem
  FROM, TO = ("half_from_bits", "half_to_bits") if elem == "half" else (
      ("bf16_from_bits", "bf16_to_bits") if half else ("from_bits", "to_bits"))
  if is_bool:
      OP = {"add": "a | b", "mul": "a & b"}
  elif compute in ("float", "double"):
      OP = {"add": "a + b", "mul": "a * b"}
  else:  # integers wrap through ulong: signed overflow is undefined in C, numpy and torch wrap
      OP = {"add": "(T)((ulong)a + (ulong)b)", "mul": "(T)((ulong)a * (ulong)b)"}
%>\
#define T ${compute}
% if arith:
inline T combine(T a, T b) { return ${OP[mode]}; }
%   if elem == "half":
${cl.half_bits()}\
%   elif half:
${cl.bf16_bits()}\
%   elif atomic == "word":
inline T from_bits(${RAW[SIZE[elem]]} b) { return as_${elem}(b); }
inline ${RAW[SIZE[elem]]} to_bits(T x) { return as_${RAW[SIZE[elem]]}(x); }
%   endif
%   if atomic in ("cas32", "cas64"):
${cl.atomic_update("atomic_combine", elem, "combine(a, b)")}\
%   endif

inline void update(__global ${mem_t} *data, IDX p, T v) {
%   if atomic == "int32":
    atomic_add((volatile __global int *)(data + p), v);
%   elif atomic == "int64":
    atom_add((volatile __global long *)(data + p), v);
%   elif atomic in ("cas32", "cas64"):
    atomic_combine(data + p, v);
%   elif atomic == "word":
<%    size = SIZE[elem]; bits_t = RAW[size] %>\
    const IDX byte = p * ${size};
    volatile __global uint *w = (volatile __global uint *)((__global uchar *)data + (byte & ~(IDX)3));
#ifdef __ENDIAN_LITTLE__
    const uint shift = (uint)(byte & 3) * 8;
#else
    const uint shift = (uint)(${4 - size} - (byte & 3)) * 8;
#endif
    const uint mask = ${"0xffu" if size == 1 else "0xffffu"} << shift;
    uint old = 0, expected;
    do {
        expected = old;
        const ${bits_t} cur = (${bits_t})((expected & mask) >> shift);
        const ${bits_t} next = ${TO}(combine(${FROM}(cur), v));
        old = atomic_cmpxchg(w, expected, (expected & ~mask) | ((uint)next << shift));
    } while (old != expected);
%   elif atomic == "serial":
%     if half:
    data[p] = ${TO}(combine(${FROM}(data[p]), v));
%     else:
    data[p] = combine(data[p], v);
%     endif
%   endif
}
% endif

__kernel void ${name}(
    __global ${mem_t} *data, IDX data_off,
% if kind == "gather":
    __global ${mem_t} *out, IDX out_off,
% elif value == "tensor":
    __global const ${mem_t} *val, IDX val_off,
% else:
    ${mem_t} sval,
% endif
% for k in range(nidx):
    __global const long *ix${k}, IDX ix${k}_off, long size${k}, long wrap${k}, IDX step${k},
% endfor
% for d in range(ndim):
    IDX n${d}, IDX ds${d},${" IDX os%d," % d if kind == "gather" else (" IDX vs%d," % d if value == "tensor" else "")}${"".join(" IDX ks%d_%d," % (k, d) for k in range(nidx))}
% endfor
% if checked:
    __global int *flag,
% endif
% if atomic == "serial":
    IDX start,
% endif
    IDX n)
{
% if atomic == "serial":
    // one work-item applies the updates [start, n) in order (see the header); the launcher splits the space
    // into several launches where a device limits the loop iterations of a work-item
    if (get_global_id(0) != 0) return;
    for (IDX gid = start; gid < n; gid++) {
% else:
    const IDX gid = get_global_id(0);
    if (gid >= n) return;
    {
% endif
        IDX p = data_off;
% if kind == "gather":
        IDX po = out_off;
% elif value == "tensor":
        IDX pv = val_off;
% endif
% for k in range(nidx):
        IDX q${k} = ix${k}_off;
% endfor
        IDX rem = gid;
% for d in reversed(range(ndim)):
        {
            const IDX c = ${"rem" if d == 0 else "rem %% n%d" % d};
%   if d:
            rem /= n${d};
%   endif
            p += c * ds${d};
%   if kind == "gather":
            po += c * os${d};
%   elif value == "tensor":
            pv += c * vs${d};
%   endif
%   for k in range(nidx):
            q${k} += c * ks${k}_${d};
%   endfor
        }
% endfor
        int ok = 1;
% for k in range(nidx):
        {
            long v = ix${k}[q${k}];
            if (v < 0) v += wrap${k};
%   if checked:
            if (v < 0 || v >= size${k}) {
                ok = 0;
                atomic_min(flag, (int)min((long)gid * ${nidx} + ${k}, (long)INT_MAX - 1));
            } else {
                p += (IDX)v * step${k};
            }
%   else:
            p += (IDX)v * step${k};
%   endif
        }
% endfor
% if kind == "gather":
        out[po] = ok ? data[p] : (${mem_t})0;
% else:
<%
    if value == "tensor":
        load = f"{FROM}(val[pv])" if half else "val[pv]"
    else:
        load = f"{FROM}(sval)" if half else "sval"
%>\
        if (ok) {
%   if arith:
            update(data, p, ${load});
%   else:
            data[p] = ${"val[pv]" if value == "tensor" else "sval"};
%   endif
        }
% endif
    }
}
% elif kind in ("nonzero_count", "nonzero_write"):
<%
  raw = RAW[itemsize]
  # a float is nonzero when its magnitude bits are (so -0.0 is zero and NaN is not)
  MAG = {2: "0x7fffu", 4: "0x7fffffffu", 8: "0x7fffffffffffffffUL"}
  test = f"(x & {MAG[itemsize]}) != 0" if is_float else "x != 0"
%>\
// Work-item g walks its chunk [g * chunk, (g + 1) * chunk) of the row-major order, stepping its coordinates
// like an odometer. The count pass stores how many nonzeros each chunk holds, the scan pass turns those into
// offsets, and the write pass stores each nonzero's coordinates at its chunk's offset.
__kernel void ${name}(
    __global const ${raw} *src, IDX src_off,
% for d in range(ndim):
    IDX n${d}, IDX s${d},
% endfor
    IDX n, IDX chunk, __global long *counts${", __global long *out" if kind == "nonzero_write" else ""})
{
    const IDX g = get_global_id(0);
    const IDX start = g * chunk;
    if (start >= n) return;
    const IDX end = min(n, start + chunk);
    IDX p = src_off, rem = start;
% for d in reversed(range(ndim)):
    IDX c${d} = ${"rem" if d == 0 else "rem %% n%d" % d};
%   if d:
    rem /= n${d};
%   endif
    p += c${d} * s${d};
% endfor
% if kind == "nonzero_count":
    long count = 0;
% else:
    long o = counts[g] * ${ndim};
% endif
    for (IDX j = start; j < end; j++) {
        const ${raw} x = src[p];
        if (${test}) {
% if kind == "nonzero_count":
            count++;
% else:
%   for d in range(ndim):
            out[o + ${d}] = c${d};
%   endfor
            o += ${ndim};
% endif
        }
% for d in reversed(range(ndim)):
        ${"" if d == ndim - 1 else "  " * (ndim - 1 - d)}if (++c${d} < n${d}) { p += s${d}; } else {
        ${"" if d == ndim - 1 else "  " * (ndim - 1 - d)}    c${d} = 0; p -= (n${d} - 1) * s${d};
% endfor
% for d in range(ndim):
        ${"  " * (ndim - 1 - d)}}
% endfor
    }
% if kind == "nonzero_count":
    counts[g] = count;
% endif
}
% elif kind == "nonzero_scan":
// One work-group turns the G chunk counts into exclusive offsets in place and stores the total at counts[G].
__kernel void ${name}(__global long *counts, IDX G, __local long *part)
{
    const int l = get_local_id(0), L = get_local_size(0);
    const IDX per = (G + L - 1) / L;
    const IDX a = min(G, (IDX)l * per), b = min(G, a + per);
    long s = 0;
    for (IDX i = a; i < b; i++) s += counts[i];
    part[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        long acc = 0;
        for (int i = 0; i < L; i++) { const long c = part[i]; part[i] = acc; acc += c; }
        counts[G] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    long acc = part[l];
    for (IDX i = a; i < b; i++) { const long c = counts[i]; counts[i] = acc; acc += c; }
}
% endif
