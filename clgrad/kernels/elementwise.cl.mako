## n-ary elementwise kernels: out[i] = expr(a, b, c) over broadcast, strided operands, one kernel per
## (name, expr) in `kernels`. The launcher bundles every op that shares the operand layout and types into one
## program: a PoCL build costs about the same for 1 kernel or 40, and code is generated per kernel on first use.
## Inputs arrive already broadcast to the output's shape (stride 0 on broadcast dims) and with
## dims coalesced by the launcher, so `ndim` is small. A contiguous operand skips index math.
## ``prelude``: statements run after the loads, before the store (``clgrad.compile``'s fused chains: one statement
## per op, so the compiler contracts a multiply and an add into an fma exactly where the op's own kernel would).
## ``checked``: the integer division kernels (floor_divide, trunc_divide, remainder, fmod) that also take the launching
## thread's error buffer and a slot, and set it where the divisor is 0 (the result stays the defined 0).
## ``tile``, ``tiles``: a grid kernel's inputs read through ``tile`` x ``tile`` local-memory tiles (their positions;
## transposed operands on PoCL, see backends/opencl/elementwise.py: _tile_side), launched in work-groups of a tile.
<%namespace name="cl" file="prelude.cl.mako"/>\
<%
  letters = "abcdefgh"
  strided = (not out_contig) or any((not contig) and (not scalar) for scalar, _, _, contig in args)
  def load(k, arg, idx=None):
      scalar, ctype, load_t, contig = arg
      if scalar:
          return f"s{k}"
      if idx is None:
          idx = f"off{k} + gid" if contig else f"i{k}"
      raw = cl.module.load(ctype, f"in{k}", idx)
      if load_t == "bool":
          return f"({raw} != 0)"
      if half_compute and ctype != half_compute:
          # PyTorch converts every operand to the common dtype first: round through half (bfloat16)
          return f"round_{'half' if half_compute == 'half' else 'bf16'}((float){raw})"
      return f"({load_t}){raw}"
  oidx = "out_off + gid" if out_contig else "io"
  import re as _re
  _FM = _re.compile(r"\b(log1p|log|expm1|erf|sin|cos|hypot|atan2|atanh|atan)\(")
  def fm(code):
      """In float, log log1p expm1 erf sin cos hypot atan atan2 atanh call clgrad's own (below), not the builtins (a macro of the builtin's
      name would clash with PoCL's own macros for its builtins, and a program group #undefs macros between
      members)."""
      if compute != "float":
          return code
      return _FM.sub(r"clg_\1(", code)
  fm_used = compute == "float" and any(_FM.search(c) for c in [e for _, e in kernels] + list(prelude))
%>\
${cl.header(fp64, idx_t)}\
#define T ${compute}
// a floating constant in the compute type: a double literal would need cl_khr_fp64 in a float kernel
% if compute == "double":
#define K(x) x
% else:
#define K(x) x##f
% endif
// pow_f: the pow op's float kernel. PoCL's pow() is a scalar call (400x an exp on 256K floats); this one vectorizes:
// |x|^y = e^(y log|x|) in double (log of the mantissa by atanh's series, e^f by a polynomial, both near-minimax fits
// to ~2^-34), so the float result is the correctly rounded one nearly always (0.507 ulp at most on 4M random pairs),
// like PyTorch's std::pow in double; then C99's special values, x = 0 and inf through t = +-inf. It must be inlined
// (a call stops PoCL's vectorizer: 2.8 ms against 0.43 ms on 256K floats) and use no double builtin but fma():
// floor() to round t / ln2 made the kernel 1.7x slower (the 2^52 + 2^51 shift rounds instead and leaves k in the
// low bits). Selects and bitwise & | only (&& and || branch). Measured on PoCL 3.1, AVX-512, 256K floats: trimming
// the polynomials to what a float needs (atanh 9 -> 4 terms, e^f 11 -> 7) ~14%, the special values through t ~6%;
// tried and dropped: a float reciprocal for the division (slower), glibc's table-driven log2/exp2 (gathers, ~2x
// slower), float-float throughout (PoCL vectorizes 8 lanes of float or of double alike here: ~1.6x slower), one
// e^f term fewer (4% faster, 0.55 ulp). LLVM's SLP vectorizer must not pack alike operations on x and y (|x| and
// |y| by one bit mask, compares of both): a packed pair makes the loop vectorizer give up (20x slower), so the
// subnormal test compares bits and |y| is fabs. Without fp64 (Mesa rusticl) the builtin stays: there it takes 3x
// exp's time, and the float-float version (0.77 ulp) 17x on llvmpipe.
% if compute == "float":
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
inline __attribute__((always_inline)) float pow_f(float x, float y) {
    const uint ux = as_uint(x) & 0x7fffffffu;
    const float ax = as_float(ux), ay = fabs(y);
    const int yi = (int)(ay < 16777216.0f ? ay : 0.0f);  // from 2^24 on every float is an even integer
    const int yint = (ay >= 16777216.0f) | ((float)yi == ay), yodd = yint & yi & 1;
    // |x| = 2^e m, m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first)
    const int sub = ux < 0x00800000u;
    const int ix = as_int(sub ? ax * 8388608.0f : ax) - 0x3f3504f3;
    const int e = (ix >> 23) - (sub ? 23 : 0);
    const double m = (double)as_float((ix & 0x7fffff) + 0x3f3504f3);
    // log m = v + v w P(w), v = 2 (m - 1) / (m + 1), w = v^2 <= 0.118
    const double v = fma(m, 2.0, -2.0) / (m + 1.0), w = v * v;
    const double p = fma(fma(fma(0.000455705578400723, w, 0.002230527818177925), w, 0.012500038268911672), w,
                         0.08333333319204593);
    double t = (double)y * fma((double)e, 0.6931471805599453, fma(v * w, p, v));
    t = ax == INFINITY ? (double)y * INFINITY : t;
    t = x == 0.0f ? (double)y * -INFINITY : t;
    const int one = t != t;  // |x| = 1 and y = +-inf (inf * 0), or y NaN (below)
    t = t < -104.5 ? -104.5 : (t > 89.5 ? 89.5 : t);  // beyond, the float result is 0 or inf anyway
    // e^t = 2^k e^f, k = rint(t / ln2), |f| <= ln2 / 2: e^f = 1 + f Q(f)
    double kd = fma(t, 1.4426950408889634, 0x1.8p52);
    const ulong ki = as_ulong(kd);
    kd -= 0x1.8p52;
    const double f = fma(-kd, 0.6931471805599453, t);
    const double q = fma(fma(fma(fma(fma(fma(0.00019841100628144532, f, 0.0013941012453546), f, 0.008333403190441714),
                         f, 0.041666354360807706), f, 0.1666666624821745), f, 0.5000000046671594), f,
                         1.000000000031295);
    float r = (float)(fma(f, q, 1.0) * as_double((ki + 1023) << 52));  // rounds once, subnormals too
    r = as_float(as_int(r) ^ (as_int(x) & (yodd << 31)));  // a negative x to an odd power
    r = (x < 0.0f) & (x != -INFINITY) & (yint ^ 1) ? NAN : r;  // a negative finite x to a non-integer power
    r = one ? 1.0f : r;
    r = (x != x) | (y != y) ? NAN : r;
    return (y == 0.0f) | (x == 1.0f) ? 1.0f : r;
}
#else
#define pow_f(x, y) pow(x, y)
#endif
% else:
#define pow_f(x, y) pow(x, y)
% endif
% if fm_used:
// clgrad's float log, log1p, expm1, erf, sin, cos, hypot, atan, atan2 and atanh: PoCL's builtins are scalar library calls (log 1.5 ms, log1p
// 1.8, expm1 2.8, erf 3.5, sin 3.5 on 256K floats against exp's 0.14: a call stops its work-item vectorizer); these
// are selects and arithmetic only, always inlined, within 2 ulp (checked on a sample of every float32 in
// tests/ops/test_float_math.py). Included only into programs whose expressions call them.
// log(1 + f) + e ln2 for f in [sqrt(1/2) - 1, sqrt(2) - 1] (fdlibm's logf: log(1 + f) = f - hfsq + s (hfsq + R),
// s = f / (2 + f), hfsq = f^2 / 2; ln2 split in hi + lo)
inline __attribute__((always_inline)) float clg_log_core(float f, float fe) {
    const float s = f / (2.0f + f), z = s * s, w = z * z;
    const float R = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
    const float hfsq = 0.5f * f * f;
    return s * (hfsq + R) + fe * 9.0580006145e-06f - hfsq + f + fe * 6.9313812256e-01f;
}
inline __attribute__((always_inline)) float clg_log(float x) {
    // x = 2^e m, m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^25 first)
    const int sub = x < 1.17549435e-38f;
    const uint bits = as_uint(sub ? x * 33554432.0f : x);
    int e = (int)(bits >> 23) - (sub ? 152 : 127);
    float m = as_float((bits & 0x7fffffu) | 0x3f800000u);
    const int big = m > 1.41421356f;
    m = big ? m * 0.5f : m;
    e += big;
    float r = clg_log_core(m - 1.0f, (float)e);
    r = x == INFINITY ? INFINITY : r;
    r = x == 0.0f ? -INFINITY : r;
    return (x < 0.0f) | (x != x) ? NAN : r;
}
inline __attribute__((always_inline)) float clg_log1p(float x) {
    // the core on x itself near 0; beyond, log(u) + c / u with u = 1 + x rounded and c = x - (u - 1) its
    // rounding error (fdlibm's correction; u - 1 is exact)
    const float u = 1.0f + x;
    const float far = clg_log(u) + (x - (u - 1.0f)) / u;
    const float r = (x > -0.29289322f) & (x < 0.41421356f) ? clg_log_core(x, 0.0f) : far;
    const float r2 = u == 0.0f ? -INFINITY : r;  // x = -1
    return (u == INFINITY) | (x == 0.0f) ? x : r2;  // -0 stays -0
}
inline __attribute__((always_inline)) float clg_expm1(float x) {
    // Taylor's series below |x| = 1/2 (to x^9 / 9!: ~1e-9 relative), exp(x) - 1 beyond
    float p = 2.75573192e-6f;
    p = p * x + 2.48015873e-5f; p = p * x + 1.98412698e-4f; p = p * x + 1.38888889e-3f;
    p = p * x + 8.33333333e-3f; p = p * x + 4.16666667e-2f; p = p * x + 0.166666667f; p = p * x + 0.5f;
    const float small = x + x * x * p;
    return x == 0.0f ? x : (fabs(x) < 0.5f ? small : exp(x) - 1.0f);  // -0 stays -0
}
inline __attribute__((always_inline)) float clg_erf(float x) {
    // |x| < 1: x + x (P(x^2) - 1), P of degree 6 (a Chebyshev fit of erf(x) / x, 1.4e-9 relative); 1 <= |x| < 3.92:
    // 1 - Q(|x| - 2.46), Q of degree 16 (a Chebyshev fit of erfc, 4.5e-10 absolute); beyond, +-1 in float
    const float ax = fabs(x), z = x * x;
    float p = 7.882376066e-05f;
    p = p * z + -8.018818591e-04f;
    p = p * z + 5.189307760e-03f;
    p = p * z + -2.685432651e-02f;
    p = p * z + 1.128359740e-01f;
    p = p * z + -3.761262690e-01f;
    p = p * z + 1.283791659e-01f;
    const float t = ax - 2.460000000e+00f;
    float q = 8.424790570e-09f;
    q = q * t + 3.670401358e-07f;
    q = q * t + -1.166268669e-06f;
    q = q * t + -3.028755415e-06f;
    q = q * t + 1.758088619e-05f;
    q = q * t + -1.532529417e-05f;
    q = q * t + -7.627682526e-05f;
    q = q * t + 2.843416358e-04f;
    q = q * t + -3.554489360e-04f;
    q = q * t + -4.460110406e-04f;
    q = q * t + 2.936927599e-03f;
    q = q * t + -6.805508149e-03f;
    q = q * t + 9.914248876e-03f;
    q = q * t + -9.831280205e-03f;
    q = q * t + 6.534513905e-03f;
    q = q * t + -2.656304269e-03f;
    q = q * t + 5.033537173e-04f;
    const float near = x + x * p, far = copysign(ax < 3.92f ? 1.0f - q : 1.0f, x);
    return ax < 1.0f ? near : ((x != x) ? x : far);
}
// fdlibm's atanh in float through clg_log1p (0.5 log1p(2x + 2x^2 / (1 - x)) below 1/2, 0.5 log1p(2x / (1 - x))
// above; the sign kept, -0 stays -0)
inline __attribute__((always_inline)) float clg_atanh(float x) {
    const float ax = fabs(x), t = ax + ax;
    const float r = 0.5f * clg_log1p(ax < 0.5f ? t + t * ax / (1.0f - ax) : t / (1.0f - ax));
    const float s = ax > 1.0f ? NAN : (ax == 1.0f ? INFINITY : r);
    return x == 0.0f ? x : copysign(s, x);
}
// atan of t in [0, 1] ... of any |x|: 1/|x| beyond 1 (pi/2 - atan), (t - 1)/(t + 1) beyond tan(pi/8) (pi/4 +
// atan), then u + u z P(z) on |u| <= tan(pi/8) (a Chebyshev fit, 9e-11 relative); pi/2 and pi/4 as hi + lo
inline __attribute__((always_inline)) float clg_atan_abs(float ax) {  // ax >= 0 or NaN
    const int inv = ax > 1.0f;
    const float t = inv ? 1.0f / ax : ax;
    const int mid = t > 0.41421356f;
    const float u = mid ? (t - 1.0f) / (t + 1.0f) : t, z = u * u;
    float p = 5.0540937470e-02f;
    p = p * z + -8.6272395833e-02f; p = p * z + 1.1071751408e-01f; p = p * z + -1.4284174973e-01f;
    p = p * z + 1.9999977770e-01f; p = p * z + -3.3333333281e-01f;
    const float a = mid ? (7.8539818525e-01f + (u + (u * (z * p) + -2.1855695032e-08f))) : u + u * (z * p);
    return inv ? 1.5707963705e+00f + (-4.3711390063e-08f - a) : a;
}
inline __attribute__((always_inline)) float clg_atan(float x) {
    const float r = copysign(clg_atan_abs(fabs(x)), x);
    return x == 0.0f ? x : r;  // -0 stays -0
}
// C99's atan2: the angle of |y| / |x| folded by the signs (pi - r where x is negative or -0), both zero 0, both
// infinite pi/4, the sign of y last
inline __attribute__((always_inline)) float clg_atan2(float y, float x) {
    const float ay = fabs(y), ax = fabs(x);
    float r = clg_atan_abs(ay / ax);
    r = (ay == 0.0f) & (ax == 0.0f) ? 0.0f : r;
    r = (ay == INFINITY) & (ax == INFINITY) ? 7.8539818525e-01f : r;
    r = signbit(x) ? 3.1415927410e+00f + (-8.7422780126e-08f - r) : r;
    r = (x != x) | (y != y) ? NAN : r;
    return copysign(r, y);
}
#ifdef cl_khr_fp64
// 2/pi's binary fraction in 32-bit words after one zero word (Payne and Hanek's table)
__constant uint clg_2opi[8] = {0x00000000u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
                               0x3c439041u, 0xfe5163abu};
// x = q pi/2 + r, |r| <= pi/4 (r in double): below 2^20 fdlibm's medium reduction (pi/2 in 25 + 53 bits, fn * pio2_1
// exact); from 2^20 Payne-Hanek with 96 bits of 2/pi from the table (x = M 2^E: the bits of 2/pi from 2^-(E-1) on)
inline __attribute__((always_inline)) double clg_rem_pio2(float x, int *q) {
    const double xd = (double)x;
    const double fn = floor(xd * 6.36619772367581382433e-01 + 0.5);
    const double rm = (xd - fn * 1.57079631090164184570e+00) - fn * 1.58932547735281966916e-08;
    const float ax = fabs(x);
    const uint bits = as_uint(ax);
    const int E = (int)(bits >> 23) - 150;
    const ulong M = (ulong)((bits & 0x7fffffu) | 0x800000u);
    const int j0 = clamp(E + 30, 0, 160);  // the medium path's lanes read the table harmlessly
    const int w = j0 >> 5, s = j0 & 31;
    const ulong u0 = clg_2opi[w], u1 = clg_2opi[w + 1], u2 = clg_2opi[w + 2], u3 = clg_2opi[w + 3];
    const ulong w0 = (((u0 << 32) | u1) << s) >> 32, w1 = (((u1 << 32) | u2) << s) >> 32;
    const ulong w2 = (((u2 << 32) | u3) << s) >> 32;
    const ulong a = M * w2, b = M * w1, c = (M * w0) & 0xffffffffUL;
    const ulong hi = (c << 32) + b + (a >> 32);
    const uint lo = (uint)a;
    int ql = (int)(hi >> 62);
    ulong fh = hi & 0x3fffffffffffffffUL;
    uint fl = lo;
    const int up = (int)((fh >> 61) & 1UL);  // fraction >= 1/2: the next quadrant, the fraction negated
    const ulong nfh = (~fh + (fl == 0u ? 1UL : 0UL)) & 0x3fffffffffffffffUL;
    fh = up ? nfh : fh;
    fl = up ? ~fl + 1u : fl;
    ql += up;
    const double f = ((double)fh + (double)fl * 2.3283064365386963e-10) * 2.168404344971009e-19;  // 2^-32, 2^-62
    const double rl = (up ? -f : f) * 1.5707963267948966;
    const int neg = x < 0.0f, big = ax >= 1048576.0f;
    *q = big ? (neg ? -ql : ql) : (int)fn;
    return big ? (neg ? -rl : rl) : rm;
}
inline __attribute__((always_inline)) float clg_sin_poly(float r, float z) {  // |r| <= pi/4, z = r^2
    float p = 2.7249963690e-06f;
    p = p * z + -1.9840087125e-04f; p = p * z + 8.3333318758e-03f; p = p * z + -1.6666666664e-01f;
    return r + r * (z * p);
}
inline __attribute__((always_inline)) float clg_cos_poly(float z) {
    float p = -2.7300986311e-07f;
    p = p * z + 2.4800600661e-05f; p = p * z + -1.3888887673e-03f; p = p * z + 4.1666666664e-02f;
    return 1.0f - (0.5f * z - z * (z * p));
}
inline __attribute__((always_inline)) float clg_sin(float x) {
    int q;
    const float r = (float)clg_rem_pio2(x, &q), z = r * r;
    const float s = clg_sin_poly(r, z), c = clg_cos_poly(z);
    const float v = (q & 1) ? c : s;
    const float res = (q & 2) ? -v : v;
    return fabs(x) == INFINITY ? NAN : (x == 0.0f ? x : res);  // -0 stays -0
}
inline __attribute__((always_inline)) float clg_cos(float x) {
    int q;
    const float r = (float)clg_rem_pio2(x, &q), z = r * r;
    const float s = clg_sin_poly(r, z), c = clg_cos_poly(z);
    const float v = (q & 1) ? s : c;
    const float res = ((q + 1) & 2) ? -v : v;
    return fabs(x) == INFINITY ? NAN : res;
}
// hypot in double (no overflow or underflow there, float's squares fit): an infinity wins over NaN, as C99's
inline __attribute__((always_inline)) float clg_hypot(float x, float y) {
    const double xd = (double)x, yd = (double)y;
    const float r = (float)sqrt(xd * xd + yd * yd);
    return (fabs(x) == INFINITY) | (fabs(y) == INFINITY) ? INFINITY : r;
}
#else
#define clg_sin(x) sin(x)  /* the reduction works in double: without fp64, the builtins */
#define clg_cos(x) cos(x)
#define clg_hypot(x, y) hypot(x, y)
#endif
% endif
% if half_compute == "half":
${cl.half_bits()}\
% elif half_compute:
${cl.bf16_bits()}\
% endif
% if integral:
<% signed = compute in ("char", "short", "int", "long") %>\
// Floor division and Python-style remainder; the guards keep x / 0 and INT_MIN / -1 from trapping.
inline T py_floordiv(T a, T b) {
    if (b == 0) return 0;
%   if signed:
    if (b == -1) return (T)(0UL - (ulong)a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
%   else:
    return a / b;
%   endif
}
inline T trunc_div(T a, T b) {
    if (b == 0) return 0;
%   if signed:
    if (b == -1) return (T)(0UL - (ulong)a);
%   endif
    return a / b;
}
inline T py_remainder(T a, T b) {
    if (b == 0${" || b == -1" if signed else ""}) return 0;
    T r = a % b;
%   if signed:
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
%   endif
    return r;
}
inline T int_fmod(T a, T b) { return (b == 0${" || b == -1" if signed else ""}) ? 0 : a % b; }
// Negative exponents give 0 except for bases 1 and -1, as PyTorch does on GPUs.
inline T int_pow(T a, T b) {
%   if signed:
    if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
%   endif
    T r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
inline T shift_left(T a, T b) { return (${"b < 0 || " if signed else ""}b >= (T)(8 * sizeof(T))) ? 0 : (T)(a << b); }
inline T shift_right(T a, T b) {
%   if signed:
    return (b < 0 || b >= (T)(8 * sizeof(T))) ? (a < 0 ? (T)-1 : 0) : (T)(a >> b);
%   else:
    return b >= (T)(8 * sizeof(T)) ? 0 : (T)(a >> b);
%   endif
}
// torch.gcd/lcm: Euclid on magnitudes (gcd(INT_MIN, 0) stays INT_MIN, as in PyTorch)
inline T int_gcd(T a, T b) {
    a = (T)abs(a); b = (T)abs(b);
    while (a != 0) { T c = a; a = b % a; b = c; }
    return b;
}
inline T int_lcm(T a, T b) { T g = int_gcd(a, b); return g == 0 ? 0 : (T)abs(a / g * b); }
% else:
// PyTorch's (and numpy's) divmod algorithm, so floor division agrees with Python on every device.
inline T py_floordiv(T a, T b) {
    if (b == 0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign((T)0, a / b);
    T fl = floor(div);
    if (div - fl > K(0.5)) fl += 1;
    return fl;
}
// PyTorch's remainder: a zero result keeps fmod's sign (numpy would use the divisor's).
inline T py_remainder(T a, T b) {
    T mod = fmod(a, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
}
// max/min that propagate NaN like torch.maximum (fmax would drop it).
inline T nan_max(T a, T b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }
inline T nan_min(T a, T b) { return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }
// torch.isclose: equal, or a finite difference within atol + rtol * |b|
inline int close_to(T a, T b, T rtol, T atol) {
    T err = fabs(a - b);
    return a == b || (isfinite(err) && err <= atol + fabs(rtol * b));
}
// torch.logit: eps < 0 stands for eps=None (no clamping)
inline T logit_eps(T x, T eps) {
    if (eps >= 0) x = x < eps ? eps : (x > (T)1 - eps ? (T)1 - eps : x);
    return log(x / ((T)1 - x));
}
%   if any("spf_" in e for _, e in kernels) or any("spf_" in st for st in prelude):
<%include file="special_fns.mako"/>
%   endif
% endif

% for name, expr in kernels:
<% expr = fm(expr) %>\
__kernel void ${name}(
    __global ${out_ctype} *out, IDX out_off,
% if not out_contig:
    ${", ".join(f"IDX os{d}" for d in range(ndim))},
% endif
% for k, (scalar, ctype, load_t, contig) in enumerate(args):
%   if scalar:
    ${"uchar" if load_t == "bool" else load_t} s${k},
%   else:
    __global const ${ctype} *in${k}, IDX off${k},
%     if not contig:
    ${", ".join(f"IDX st{k}_{d}" for d in range(ndim))},
%     endif
%   endif
% endfor
% if strided:
    ${", ".join(f"IDX n{d}" for d in range(ndim))},
% endif
    IDX numel${", volatile __global int *err, int err_slot" if name in checked else ""})
{
% if grid:
    // an ndim-D launch (CPU devices): coordinates come from the work-item ids, innermost dim first, so no
    // integer division per element; the innermost global size is rounded up to the work-group size (``guard``)
    // (an innermost stride of 0 or 1 is compiled in: ``inner``, in the order out, tensor inputs)
<%
    tensor_pos = [k for k, (scalar, _, _, _) in enumerate(args) if not scalar]
    targets = [(f"i{k}", f"off{k}", f"st{k}_", inner[1 + tensor_pos.index(k)])
               for k, (scalar, _, _, contig) in enumerate(args) if not scalar and not contig and k not in tiles]
    if not out_contig:
        targets.append(("io", "out_off", "os", inner[0]))
    def term(d, st, unit):
        if d == ndim - 1 and unit is not None:
            return f" + c{d}" if unit == 1 else ""
        return f" + c{d} * {st}{d}"
%>\
%   if tiles:
<%
    r, c = ndim - 2, ndim - 1
    # the work-group's tile lies wholly inside the tensor (uniform: the compiler takes the unguarded loop for it)
    full = f"((get_group_id(1) + 1) * {tile} <= (size_t)n{r} && (get_group_id(0) + 1) * {tile} <= (size_t)n{c})"
    batch = f" + (IDX)get_group_id(2) * st{{k}}_0" if ndim == 3 else ""
%>\
    // ``tiles``: operands read down their rows (unit stride), across them with a long one. The work-group reads
    // a tile of each along its rows (work-item (x, y) the element at row x, column y of the tile), a barrier,
    // then each work-item takes its element (row y, column x) from the tile. Nothing computed before the
    // barrier is used after it: PoCL would keep such values per work-item and gather through them.
%     for k in tiles:
    __local ${"uchar" if args[k][2] == "bool" else args[k][2]} tile${k}[${tile}][${tile + 1}];
%     endfor
    {
        const IDX tr = (IDX)(get_group_id(1) * ${tile} + get_local_id(0));
        const IDX tc = (IDX)(get_group_id(0) * ${tile} + get_local_id(1));
%     if guard:
        if (${full} || (tr < n${r} && tc < n${c})) {
%     else:
        {
%     endif
%     for k in tiles:
            tile${k}[get_local_id(1)][get_local_id(0)] = ${load(k, args[k], f"off{k}{batch.format(k=k)} + tr + tc * st{k}_{c}")};
%     endfor
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
%   endif
## a tile kernel's coordinates come from the group and local ids: with get_global_id's, PoCL gathered the
## elements of a kernel with guarded (tail) tiles, its whole tiles included
%   for d in range(ndim):
%     if tiles:
    const IDX c${d} = (IDX)${f"(get_group_id({ndim - 1 - d}) * {tile} + get_local_id({ndim - 1 - d}))" if d >= ndim - 2 else "get_group_id(2)"};
%     else:
    const IDX c${d} = (IDX)get_global_id(${ndim - 1 - d});
%     endif
%   endfor
%   if guard and tiles:
    // the rest in a block, not after a return: only so does PoCL take the unguarded loop for a whole tile
    if (${full} || (c${ndim - 2} < n${ndim - 2} && c${ndim - 1} < n${ndim - 1})) {
%   elif guard:
    if (c${ndim - 1} >= n${ndim - 1}) return;
%   endif
%   if tiles:
    ## in size_t: in int, PoCL gathered a guarded 3-D tile kernel's elements
    const IDX gid = (IDX)${"(" * (ndim - 1) + "(size_t)c0" + "".join(f" * n{d} + c{d})" for d in range(1, ndim))};
%   else:
    const IDX gid = ${"(" * (ndim - 1) + "c0" + "".join(f" * n{d} + c{d})" for d in range(1, ndim))};
%   endif
%   for var, off, st, unit in targets:
    const IDX ${var} = ${off}${"".join(term(d, st, unit) for d in range(ndim))};
%   endfor
% else:
%   if guard:
    // compare in size_t: a global size rounded up past INT_MAX must not wrap gid negative
    if (get_global_id(0) >= (size_t)numel) return;
%   endif
    IDX gid = (IDX)get_global_id(0);
% if strided:
    // unravel gid over the shape, accumulating each strided operand's offset
<%
    targets = [(f"i{k}", f"off{k}", f"st{k}_") for k, (scalar, _, _, contig) in enumerate(args) if not scalar and not contig]
    if not out_contig:
        targets.append(("io", "out_off", "os"))
%>\
%   for var, off, _ in targets:
    IDX ${var} = ${off};
%   endfor
    IDX rem = gid;
%   for d in reversed(range(ndim)):
    {
        IDX c = ${"rem" if d == 0 else f"rem % n{d}"};
%     if d:
        rem /= n${d};
%     endif
%     for var, _, st in targets:
        ${var} += c * ${st}${d};
%     endfor
    }
%   endfor
% endif
% endif
% for k, arg in enumerate(args):
%   if grid and k in tiles:
    ${"uchar" if arg[2] == "bool" else arg[2]} ${letters[k]} = tile${k}[get_local_id(0)][get_local_id(1)];
%   else:
    ${"uchar" if arg[2] == "bool" else arg[2]} ${letters[k]} = ${load(k, arg)};
%   endif
% endfor
% for statement in prelude:
    ${fm(statement)}
% endfor
% if name in checked:
    if (b == 0) {  /* integer division by zero: raised at the next sync (word 0: any failed check) */
        atomic_or(err + err_slot, 1);
        atomic_or(err, 1);
    }
% endif
% if out_cast in ("half", "bfloat16"):
    // double -> float -> half (bfloat16), as c10::Half (c10::BFloat16) converts
    ${cl.module.store(out_cast, "out", oidx, expr)};
% elif out_cast == "bool":
    out[${oidx}] = (uchar)((${expr}) != 0);
% elif out_cast == "float_to_small_int":
    out[${oidx}] = (${out_ctype})(long)(${expr});
% else:
    out[${oidx}] = (${out_ctype})(${expr});
% endif
% if grid and tiles and guard:
    }
% endif
}

% endfor
