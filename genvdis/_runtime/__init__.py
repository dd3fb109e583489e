"""Process-level machinery: compiled-kernel cache, jit, BLAS tuning, random streams, progress."""
