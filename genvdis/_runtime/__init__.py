"""What the process runs on, below every model: counter-based random streams (`streams`), the
numba decorator (`jit`) and its cache folder (`kernelcache`), allocator and BLAS-thread
settings (`tuning`), scipy's BLAS and HiGHS without extra packages (`extensions`), portable
linear algebra (`portable`), worker processes (`parallel`) and kernels called in short pieces
so Ctrl-C is heard (`shortcalls`). Private to genvdis.
"""

__all__ = [
    "extensions", "jit", "kernelcache", "parallel", "portable", "shortcalls", "streams", "tuning",
]  # fmt: skip
