"""Reading and checking what a user asks for: the run config (`experiment`), its sections and
defaults (`sections`), theory configs (`theory`), a sweep's variants (`variants`), the shipped
configs (`builtin`) and the names of the files genvdis writes beside the runs (`resultnames`).
Validation happens once, here, with one-line errors naming the file and field; the layers above
take a checked config. Config sits above models (it builds the `models:` field from their specs)
and below data.
"""

__all__ = ["builtin", "experiment", "resultnames", "sections", "theory", "variants"]
