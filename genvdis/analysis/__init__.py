"""Statistics over stored errors: paired differences, crossovers, fits, shapes, sensitivity."""
