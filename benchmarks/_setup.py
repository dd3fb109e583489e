"""What every benchmark loads for a config: the data in both encodings, the models and the
split protocol, as `engine.run_experiment` builds them for `engine.run_block`."""

from __future__ import annotations

from typing import NamedTuple

from genvdis._runtime.tuning import tune_process
from genvdis.config.experiment import ExperimentConfig, load_config
from genvdis.data.preprocessing import PreparedData, prepare
from genvdis.data.sources import load_data
from genvdis.experiment.engine import Protocol
from genvdis.experiment.scoring import EncodedData
from genvdis.models.base import LinearModel
from genvdis.models.estimators import build_models


class Setup(NamedTuple):
    config: ExperimentConfig
    data: PreparedData
    encoded: EncodedData
    models: list[LinearModel]
    protocol: Protocol


def load(path: str) -> Setup:
    """The config at `path` with its data (from the cache or `GENVDIS_MIRROR`), ready to run."""
    tune_process()  # as a run does: the allocator thresholds the engine is measured with
    config = load_config(path)
    data = prepare(load_data(config), config)
    models = build_models(config.models, data.layout, n_classes=len(data.class_counts))
    return Setup(config, data, EncodedData.from_prepared(data), models, Protocol.of(config))
