## The shared kernel prelude: what every template needs at its top, and the helpers several of them use.
## A template opens with
##     <%namespace name="cl" file="prelude.cl.mako"/>
##     ${cl.header(fp64, idx_t)}
## and reaches the Python helpers below as ``cl.module.load(...)``. Nothing here renders by itself: each template
## calls what it uses, so every rendered source stands alone. That is what program groups (groups.py) need: they
## rename each member's file-scope names, helpers included, so two members' copies of a helper never clash, and
## they combine only members whose pragma lines are the same.
<%!
def load(ctype: str, buf: str, addr: str, to: str = "") -> str:
    """Element ``addr`` of ``buf``, stored as ``ctype``, as a value (cast to ``to`` when given). half is storage
    only: a half value needs cl_khr_fp16, ``vload_half`` (core OpenCL) gives a float."""
    raw = f"vload_half({addr}, {buf})" if ctype == "half" else f"{buf}[{addr}]"
    if ctype == "bfloat16":  # the upper 16 bits of a float (``#define bfloat16 ushort``: storage only)
        raw = f"as_float((uint){buf}[{addr}] << 16)"
    return f"({to}){raw}" if to else raw


def store(ctype: str, buf: str, addr: str, value: str) -> str:
    """The statement storing ``value`` into element ``addr`` of ``buf`` (rounded to nearest even for half)."""
    if ctype == "half":
        return f"vstore_half_rte((float)({value}), {addr}, {buf})"
    if ctype == "bfloat16":  # c10::BFloat16's rounding: to nearest even, NaN as 0x7fc0 (a double through float)
        return (f"do {{ const uint u_ = as_uint((float)({value})); {buf}[{addr}] = (ushort)(isnan(as_float(u_)) ? "
                f"0x7fc0u : (u_ + 0x7fffu + ((u_ >> 16) & 1u)) >> 16); }} while (0)")
    return f"{buf}[{addr}] = ({ctype})({value})"
%>\
## header: the pragmas and the index type. ``fp64``: the kernel touches double (the one switch for cl_khr_fp64:
## a float kernel must not need the extension); ``int64_atomics``: it uses 64-bit atomics; ``idx_t``: the type of
## index arithmetic, ``int`` when every buffer fits in 2^31 elements, else ``long`` (None: the template has no IDX).
<%def name="header(fp64, idx_t=None, int64_atomics=False)">\
% if fp64:
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
% if int64_atomics:
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
% endif
% if idx_t is not None:
#define IDX ${idx_t}
% endif
#define bfloat16 ushort
</%def>\
## half_bits: a half value kept as its bits in a ushort (a half variable needs cl_khr_fp16, a pointer to half does
## not), and rounding a float to the nearest half.
<%def name="half_bits()">\
inline float half_from_bits(ushort h) { return vload_half(0, (const half *)&h); }
inline ushort half_to_bits(float x) { ushort h; vstore_half_rte(x, 0, (half *)&h); return h; }
inline float round_half(float x) { return half_from_bits(half_to_bits(x)); }
</%def>\
## bf16_bits: a bfloat16 value as its bits in a ushort, and rounding a float to the nearest bfloat16.
<%def name="bf16_bits()">\
inline float bf16_from_bits(ushort h) { return as_float((uint)h << 16); }
inline ushort bf16_to_bits(float x) { ushort h; ${store("bfloat16", "(&h)", "0", "x")}; return h; }
inline float round_bf16(float x) { return bf16_from_bits(bf16_to_bits(x)); }
</%def>\
## atomic_update: ``fn(p, v)`` sets *p = op(*p, v) atomically, for ``elem`` float or double (or any 4- or 8-byte
## type), as a compare-and-swap loop on the value's bits; ``op`` is a C expression of a (the old value) and b (v).
## Correct for any number of concurrent updates of one address, in an order that varies between runs (float sums
## may differ in the last bits, as with atomics in PyTorch's CUDA index_add). 8-byte types need int64_atomics.
<%def name="atomic_update(fn, elem, op)">\
<% word, cas = ("ulong", "atom_cmpxchg") if elem in ("double", "long", "ulong") else ("uint", "atomic_cmpxchg") %>\
inline void ${fn}(volatile __global ${elem} *p, ${elem} b) {
    volatile __global ${word} *w = (volatile __global ${word} *)p;
    // the first guess needs no plain load (which would race with other work-items' swaps): a wrong guess
    // only costs one failed compare-and-swap, which returns the current value
    ${word} old = 0, expected;
    do {
        expected = old;
        const ${elem} a = as_${elem}(expected);
        old = ${cas}(w, expected, as_${word}(${op}));
    } while (old != expected);
}
</%def>\
