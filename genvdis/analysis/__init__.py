"""The statistics of finished runs, pure functions of their tables: paired differences, the
crossover and the verdict (`differences`), the curves' fits (`fits`) and shape (`shape`),
the theory's m*(eps) (`theory`), a sweep's sensitivity (`sensitivity`), and the analysis
files written beside the runs (`runs`).
"""

__all__ = ["differences", "fits", "runs", "sensitivity", "shape", "theory"]
