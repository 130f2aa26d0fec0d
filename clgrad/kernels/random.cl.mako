## Philox4x32-10 random kernel: one kernel per (dist, output dtype).
## Render kwargs: name, dist, out_ctype, out_dtype, param_ctype, fp64
## (see clgrad.backends.philox.kernel_params). The numpy reference
## implementation clgrad.backends.philox.sample() defines the stream; every
## arithmetic step below mirrors it in the same precision and order.
<%
    is_half = out_ctype in ("half", "bfloat16")  # 16-bit floats: storage only
    # Precision of the intermediate value: double only for float64 outputs.
    ftype = "double" if out_dtype == "float64" else "float"
    suffix = "" if ftype == "double" else "f"
    gamma_tag = 0x67616D6D  # the gamma sampler's fourth counter word: cpu_random.GAMMA_TAG
%>\
<%namespace name="cl" file="prelude.cl.mako"/>\
${cl.header(fp64)}\

/* Philox4x32-10 (Salmon et al. 2011; Random123 constants). Prefixed with the
   kernel name so that several random kernels can share one program. The ten
   rounds are unrolled and the function always inlined: a loop (or a call) in
   the kernel body stops PoCL from vectorizing across work-items (27 ns per
   element on a CPU before, against ~1 ns unrolled). */
inline __attribute__((always_inline)) uint4 ${name}_philox4x32_10(uint4 c, uint2 k)
{
% for r in range(10):
%   if r > 0:
    k.x += 0x9E3779B9u;                    /* key schedule: Weyl sequence */
    k.y += 0xBB67AE85u;
%   endif
    {
        const uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        const uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
% endfor
    return c;
}

% if dist == "gamma":
/* Gamma(alpha[i], 1) by Marsaglia-Tsang, rejection looping until accepted: round r of element i uses the Philox
   counter (lo32(c), hi32(c), r, GAMMA_TAG) with c = ctr_base + i (the tag keeps these blocks apart from the
   (lo, hi, 0, 0) ones of the other distributions). Words x, y give the normal (Box-Muller as `normal`), z the
   acceptance uniform, w the alpha < 1 boost U^(1/alpha) (Gamma(alpha + 1) * U^(1/alpha) ~ Gamma(alpha)).
   alpha <= 0 or NaN gives the smallest normal number, +inf gives +inf, as PyTorch's _standard_gamma.
   backends/cpu_random.gamma mirrors this step for step. */
__kernel void ${name}(__global ${out_ctype} *out, long out_offset, __global const ${out_ctype} *alpha, long alpha_offset, long n, uint key_lo, uint key_hi, ulong ctr_base)
{
    #pragma OPENCL FP_CONTRACT OFF
    const long i = (long)get_global_id(0);
    if (i >= n) return;
    const ulong ctr = ctr_base + (ulong)i;
    const ${ftype} a = alpha[alpha_offset + i];
    ${ftype} v = ${"DBL_MIN" if ftype == "double" else "FLT_MIN"};
    if (isinf(a) && a > 0) {
        v = a;
    } else if (a > 0) {
        const ${ftype} ab = a < 1 ? a + 1 : a;
        const ${ftype} d = ab - (${ftype})1 / 3;
        const ${ftype} c = (${ftype})1 / sqrt(9 * d);
        /* no break/continue: llvmpipe (rusticl) mis-masks lanes that leave a divergent loop early */
        int done = 0;
        for (uint r = 0; !done; ++r) {
            const uint4 w = ${name}_philox4x32_10((uint4)((uint)ctr, (uint)(ctr >> 32), r, ${gamma_tag}u), (uint2)(key_lo, key_hi));
  % if ftype == "double":
            const double u1 = ((double)w.x + 1.0) * 0x1.0p-32;
            const double x = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * ((double)w.y * 0x1.0p-32));
            const double u = ((double)w.z + 1.0) * 0x1.0p-32;
  % else:
            const float u1 = ((float)w.x + 1.0f) * 0x1.0p-32f;
            const float x = sqrt(-2.0f * log(u1)) * cos(6.2831855f * ((float)w.y * 0x1.0p-32f));
            const float u = ((float)w.z + 1.0f) * 0x1.0p-32f;
  % endif
            const ${ftype} t = 1 + c * x;
            const ${ftype} t3 = t * t * t;
            if (t > 0 && log(u) < x * x / 2 + d - d * t3 + d * log(t3)) {
                const ${ftype} boost = a < 1 ? pow(((${ftype})w.w + 1) * ${"0x1.0p-32" if ftype == "double" else "0x1.0p-32f"}, (${ftype})1 / a) : (${ftype})1;
                v = fmax(d * t3 * boost, ${"DBL_MIN" if ftype == "double" else "FLT_MIN"});
                done = 1;
            }
        }
    }
    out[out_offset + i] = v;
}
% else:
__kernel void ${name}(__global ${out_ctype} *out, long out_offset, long n, uint key_lo, uint key_hi, ulong ctr_base, ${param_ctype} p0, ${param_ctype} p1)
{
    /* Results must be bit-identical to the numpy reference: forbid fusing
       a*b+c into fma (which rounds once instead of twice). */
    #pragma OPENCL FP_CONTRACT OFF

    const long i = (long)get_global_id(0);
    if (i >= n) return;   /* global size may be rounded up to the local size */

    /* The counter is ctr_base + i (not e.g. a per-work-item loop index) so an
       element depends only on (seed, offset + i): the output is independent of
       the launch geometry, and the host advances the offset by n per call to
       get a fresh, non-overlapping part of the stream. ulong arithmetic wraps
       mod 2^64, exactly like the numpy reference. */
    const ulong ctr = ctr_base + (ulong)i;
    const uint4 ctr_words = (uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u);
    const uint4 w = ${name}_philox4x32_10(ctr_words, (uint2)(key_lo, key_hi));

% if dist == "uniform":
  % if out_dtype == "float64":
    /* 53 random bits: 27 from w.x, 26 from w.y -> [0, 1) */
    const double u = ((double)(w.x >> 5) * 67108864.0 + (double)(w.y >> 6)) * 0x1.0p-53;
  % elif out_dtype == "bfloat16":
    /* 8 random bits, so u itself is exactly a bfloat16 value in [0, 1) */
    const float u = (float)(w.x >> 24) * 0x1.0p-8f;
  % elif out_dtype == "float16":
    /* 11 random bits, so u itself is exactly a half value in [0, 1) */
    const float u = (float)(w.x >> 21) * 0x1.0p-11f;
  % else:
    /* 24 random bits -> exact float in [0, 1) */
    const float u = (float)(w.x >> 8) * 0x1.0p-24f;
  % endif
    const ${ftype} v = p0 + u * (p1 - p0);
% elif dist == "normal":
    /* Box-Muller (first output only). u1 in (0, 1] so log(u1) is finite. */
  % if ftype == "double":
    const double u1 = ((double)w.x + 1.0) * 0x1.0p-32;
    const double u2 = (double)w.y * 0x1.0p-32;
    const double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
  % else:
    const float u1 = ((float)w.x + 1.0f) * 0x1.0p-32f;
    const float u2 = (float)w.y * 0x1.0p-32f;
    const float z = sqrt(-2.0f * log(u1)) * cos(6.2831855f * u2);   /* (float)(2*pi) */
  % endif
    const ${ftype} v = p0 + p1 * z;
% elif dist == "randint":
    /* Uniform on [p0, p1) by a 64-bit modulo (bias is < span / 2^64).
       Done in ulong: wraps instead of signed-overflow UB for huge spans. The
       span wraps to 0 only for the full range [-2^63, 2^63) (the host passes
       p1 = 2^63 as -2^63), which needs no modulo. */
    const ulong bits = ((ulong)w.y << 32) | (ulong)w.x;
    const ulong span = (ulong)p1 - (ulong)p0;
    const ulong r = span ? bits % span : bits;
    const long v = (long)(r + (ulong)p0);
% elif dist == "bernoulli":
    const float u = (float)(w.x >> 8) * 0x1.0p-24f;   /* as float32 uniform */
  % if is_half or out_dtype in ("float32", "float64"):
    const ${ftype} v = (u < p0) ? 1.0${suffix} : 0.0${suffix};
  % else:
    const ${out_ctype} v = (u < p0) ? 1 : 0;
  % endif
% endif

    ${cl.module.store(out_ctype, "out", "out_offset + i", "v")};  /* half: storage only, rounded to nearest even */
}
% endif
