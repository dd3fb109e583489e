"""Which table a config's `dataset` names: a registered UCI dataset, a user's own file, a
synthetic draw, or a table scikit-learn bundles. Each source's loader lives with its kind
(`datasets`, `synthetic`); this is the one place that chooses among them."""

from __future__ import annotations

from pathlib import Path

from genvdis import datasets
from genvdis.config import ExperimentConfig, FileDataset, SklearnSource, SyntheticSource
from genvdis.errors import UserError


def load_data(
    config: ExperimentConfig, base_dir: Path = Path("."), mirror: str | None = None
) -> datasets.RawData:
    """The raw table a config names: registered, a user's file, or synthetic."""
    source = config.dataset
    if isinstance(source, str):
        return datasets.load_registered(source, mirror=mirror)
    if isinstance(source, FileDataset):
        return datasets.load_file_dataset(source, base_dir=base_dir)
    if isinstance(source, SyntheticSource):
        from genvdis import synthetic

        return synthetic.load_synthetic(source.synthetic)
    if isinstance(source, SklearnSource):
        return datasets.load_sklearn(source.sklearn)
    raise UserError(f"dataset: unsupported source {source!r}")
