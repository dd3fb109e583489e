"""Running the experiment: the engine (`engine`) cuts a run into tasks (`planning`), draws
each split from counters (`splits`), fits the models and counts test errors (`scoring`),
and commits results through the store; `study` runs many configs' tasks in one pool, `sweeps`
runs a config under variants and `theory` runs the sample-complexity experiment over n.
"""

__all__ = ["engine", "planning", "scoring", "splits", "study", "sweeps", "theory"]
