"""The op registry: one record per op, read by every layer above it.

A leaf package (numpy only). The backends read a record's kernel part (C expression, numpy reference), the ops
layer builds functions, methods, in-place variants and autograd nodes from the rest, and the tests generate their
cases from its samples. Gradient rules are written with Tensor methods, so this package imports no layer above it.
"""
