"""The models registry (genvdis/models/registry.py): it finds the model files by itself, in a
fixed order, and every list of models in the package is the registry's."""

from __future__ import annotations

import sys

import pytest

import genvdis.models
from genvdis.models import registry
from genvdis.models.base import FeatureLayout, ModelInfo


def test_the_built_in_models_in_their_order():
    names = registry.builtin_names()
    assert names[:3] == ("naive_bayes", "logistic_regression", "lda")
    orders = [info.order for info in registry.builtin_models()]
    assert orders == sorted(orders)
    for info in registry.builtin_models():
        assert info.spec.model_fields["name"].default == info.name
        assert info.binary.name == info.name


def test_a_new_model_file_is_found_without_any_other_edit(tmp_path, monkeypatch):
    (tmp_path / "zz_fake.py").write_text(
        "from typing import Literal\n"
        "from genvdis.models.base import LinearModel, ModelInfo, StrictSpec, Style\n"
        "class Spec(StrictSpec):\n"
        "    name: Literal['zz_fake'] = 'zz_fake'\n"
        "class Fake(LinearModel):\n"
        "    name = 'zz_fake'\n"
        "MODEL = ModelInfo(name='zz_fake', spec=Spec, binary=Fake, multiclass=None,\n"
        "                  family='baseline', style=Style('-', 'tab:gray', 'fake', 'F'), order=0)\n"
    )
    monkeypatch.setattr(genvdis.models, "__path__", [*genvdis.models.__path__, str(tmp_path)])
    try:
        found = registry._find()
    finally:
        sys.modules.pop("genvdis.models.zz_fake", None)
    assert found[0].name == "zz_fake"  # order 0: first
    assert [info.name for info in found[1:]] == list(registry.builtin_names())


def test_a_file_whose_model_is_named_otherwise_is_refused(tmp_path, monkeypatch):
    (tmp_path / "zz_misnamed.py").write_text(
        "from genvdis.models.naive_bayes import MODEL\n"  # naive_bayes's descriptor, elsewhere
    )
    monkeypatch.setattr(genvdis.models, "__path__", [*genvdis.models.__path__, str(tmp_path)])
    try:
        with pytest.raises(RuntimeError, match="zz_misnamed"):
            registry._find()
    finally:
        sys.modules.pop("genvdis.models.zz_misnamed", None)


def test_every_list_of_models_is_the_registry_s():
    from genvdis.analysis import differences
    from genvdis.config import sections, variants
    from genvdis.experiment import planning
    from genvdis.report import styles

    infos = registry.builtin_models()
    assert sections.BUILTIN_MODELS == registry.builtin_names()
    assert set(differences.GENERATIVE) == {i.name for i in infos if i.family == "generative"}
    assert set(differences.DISCRIMINATIVE) == {
        i.name for i in infos if i.family == "discriminative"
    }
    assert planning.SQUARE_MODELS == {i.name for i in infos if i.square}
    assert set(styles.STYLES) == set(styles.SHORT) == set(registry.builtin_names())
    for info in infos:
        for alias, field in info.aliases.items():
            assert variants.ALIASES[alias] == f"models.{info.name}.{field}"


def test_an_unknown_model_s_message_names_every_built_in_one():
    from pydantic import TypeAdapter, ValidationError

    from genvdis.config.sections import ModelList

    with pytest.raises(ValidationError) as error:
        TypeAdapter(ModelList).validate_python(["nope"])
    for name in registry.builtin_names():
        assert name in str(error.value)


def test_build_model_gives_each_model_s_binary_or_k_class_class():
    layout = FeatureLayout(2)
    for info in registry.builtin_models():
        spec = info.spec()
        assert type(registry.build_model(spec, layout, 2)) is info.binary
        if info.multiclass is not None and spec.name != "logistic_regression":
            assert type(registry.build_model(spec, layout, 3)) is info.multiclass


def test_a_model_file_asking_for_the_models_while_they_are_found_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "_finding", [True])
    registry.builtin_models.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="while they are found"):
            registry.builtin_models()
    finally:
        monkeypatch.setattr(registry, "_finding", [])
        registry.builtin_models.cache_clear()
        registry.builtin_models()


def test_descriptors_are_frozen():
    info = registry.model_info("naive_bayes")
    assert isinstance(info, ModelInfo)
    with pytest.raises(AttributeError):
        info.order = 0  # type: ignore[misc]
