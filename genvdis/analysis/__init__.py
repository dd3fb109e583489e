"""The statistics of finished runs, pure functions of their tables: paired differences, the
crossover and the verdict (`differences`), the curves' fits (`fits`) and shape (`shape`),
the theory's m*(eps) (`theory`), a sweep's sensitivity (`sensitivity`), the analysis
files written beside the runs (`runs`), and the study's statistics across datasets (`study`).
"""

__all__ = ["differences", "fits", "runs", "sensitivity", "shape", "study", "theory"]
