## note_error: copy a deferred check's one-int flag (set by the op's kernel just before) into the check's slot of the
## launching thread's error buffer (backends/opencl/pending.py), and set the buffer's word 0, which the fused
## optimizer steps read, when the flag is set. One work-item; no host wait.
__kernel void note_error(__global const int *flag, __global int *err, int slot)
{
    const int f = flag[0];
    err[slot] = f;
    if (f) err[0] = 1;
}
