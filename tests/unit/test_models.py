"""Tests for bench.plans.models: plans as pure data (params, FLOPs, errors) and their Keras builds."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.training import keras_build
from bench.plans import models
from bench.training.keras_build import build
from bench.plans.models import FAMILIES, PRESETS, SIZES, LayerSpec, ModelError, ModelPlan, compatible, measure, plan

REPO_ROOT = Path(__file__).resolve().parents[2]
MNIST_SHAPE = (28, 28, 1)
CIFAR_SHAPE = (32, 32, 3)
IMDB_SHAPE = (250,)
IMDB_VOCAB = 10_000

# (model, input_shape, num_classes, vocab_size) that fits each family / preset.
FAMILY_DATA: dict[str, tuple[tuple[int, ...], int, int | None]] = {
    "mlp": (MNIST_SHAPE, 10, None),
    "cnn": (MNIST_SHAPE, 10, None),
    "text": (IMDB_SHAPE, 2, IMDB_VOCAB),
}
PRESET_DATA: dict[str, tuple[tuple[int, ...], int, int | None]] = {
    "seed-cifar10-mlp": (CIFAR_SHAPE, 10, None),
    "seed-mnist-dense": (MNIST_SHAPE, 10, None),
    "seed-text": (IMDB_SHAPE, 2, IMDB_VOCAB),
}


def _family_plan(family: str, size: str) -> ModelPlan:
    shape, classes, vocab = FAMILY_DATA[family]
    return plan(family, size, shape, classes, vocab_size=vocab)


def _preset_plan(name: str) -> ModelPlan:
    shape, classes, vocab = PRESET_DATA[name]
    return plan(name, None, shape, classes, vocab_size=vocab)


# --- pure-data plans ------------------------------------------------------------------------------------------------


def test_public_constants() -> None:
    assert set(FAMILIES) == {"mlp", "cnn", "text"}
    assert SIZES == ("xs", "s", "m", "l", "xl")
    assert set(PRESETS) == {"seed-cifar10-mlp", "seed-mnist-dense", "seed-text"}
    assert models.MODELS == ("mlp", "cnn", "text", "seed-cifar10-mlp", "seed-mnist-dense", "seed-text")
    for name, preset in PRESETS.items():
        assert preset.name == name
        assert preset.epochs == 10 and preset.batch_size == 32
        assert preset.source and preset.description and preset.title


def test_dense_flops_follow_the_documented_convention() -> None:
    # input 4 -> Dense 3: 12 multiply-adds (24 FLOPs) + 3 bias adds = 27 forward; training = 3 x 27.
    params, flops, shapes = measure((4,), (LayerSpec.of("Dense", units=3),))
    assert (params, flops, shapes) == (15, 81, ((3,),))
    no_bias_params, no_bias_flops, _ = measure((4,), (LayerSpec.of("Dense", units=3, use_bias=False),))
    assert (no_bias_params, no_bias_flops) == (12, 72)


def test_mlp_plan_on_feature_vector_is_exact() -> None:
    p = plan("mlp", "xs", (4,), 3)
    # Flatten (0) -> Dense 32: 2*4*32 + 32 = 288 -> Dense 3: 2*32*3 + 3 = 195; forward 483, training 1449.
    assert p.params == (4 * 32 + 32) + (32 * 3 + 3) == 259
    assert p.forward_flops_per_sample == 483
    assert p.flops_per_sample == 3 * 483
    assert p.loss == "sparse_categorical_crossentropy" and p.from_logits


def test_conv_and_pooling_flops_are_exact() -> None:
    layers = (
        LayerSpec.of("Conv2D", filters=2, kernel_size=3, padding="valid", activation="relu"),
        LayerSpec.of("MaxPooling2D", pool_size=2),
        LayerSpec.of("GlobalAveragePooling2D"),
        LayerSpec.of("Dense", units=1),
    )
    params, flops, shapes = measure((4, 4, 1), layers)
    # Conv 3x3 valid on 4x4x1 -> 2x2x2: 8 outputs x 9 MACs = 72 MACs -> 144 FLOPs + 8 bias adds = 152.
    # MaxPool 2x2 on 2x2x2 -> 1x1x2: reads 8 elements = 8. GAP on 1x1x2: 2. Dense 2 -> 1: 2*2 + 1 = 5.
    assert shapes == ((2, 2, 2), (1, 1, 2), (2,), (1,))
    assert params == (9 * 1 * 2 + 2) + (2 + 1) == 23
    assert flops == 3 * (152 + 8 + 2 + 5) == 501
    same_params, same_flops, same_shapes = measure(
        (4, 4, 1), (LayerSpec.of("Conv2D", filters=2, kernel_size=3, padding="same"),)
    )
    assert same_shapes == ((4, 4, 2),) and same_params == 20
    assert same_flops == 3 * (2 * 4 * 4 * 2 * 9 + 4 * 4 * 2) == 1824


def test_text_flops_count_pooling_and_dense_not_lookups() -> None:
    p = plan("text", "xs", (5,), 2, vocab_size=7)
    # Embedding 7x8 (56 params, 0 FLOPs) -> GAP1D reads 5*8 = 40 -> Dense 2: 2*8*2 + 2 = 34.
    assert p.params == 7 * 8 + 8 * 2 + 2 == 74
    assert p.flops_per_sample == 3 * (40 + 34)
    assert p.input_dtype == "int32"


def test_describe_is_one_informative_line() -> None:
    p = plan("mlp", "s", MNIST_SHAPE, 10)
    assert p.describe() == "MLP s: Flatten -> Dense 256 relu -> Dense 10 (203,530 params, 1.2 MFLOP/sample)"
    for family in FAMILIES:
        for size in SIZES:
            line = _family_plan(family, size).describe()
            assert "\n" not in line and f"{_family_plan(family, size).params:,} params" in line


@pytest.mark.parametrize("family", ["mlp", "cnn", "text"])
def test_sizes_grow_monotonically(family: str) -> None:
    plans = [_family_plan(family, size) for size in SIZES]
    params = [p.params for p in plans]
    flops = [p.flops_per_sample for p in plans]
    assert params == sorted(params) and len(set(params)) == len(params), params
    assert flops == sorted(flops) and len(set(flops)) == len(flops), flops
    assert [p.name for p in plans] == [f"{family}-{size}" for size in SIZES]


@pytest.mark.parametrize("family", ["mlp", "cnn"])
def test_image_families_span_three_orders_of_magnitude(family: str) -> None:
    xs, xl = _family_plan(family, "xs"), _family_plan(family, "xl")
    assert xl.params / xs.params >= 1000, (xs.params, xl.params)


def test_default_demo_model_stays_small() -> None:
    # mlp s on MNIST trains an epoch of 60,000 samples in seconds on a 2-core CPU: keep it near 1 MFLOP/sample.
    p = plan("mlp", "s", MNIST_SHAPE, 10)
    assert p.flops_per_sample * 60_000 < 1e11


def test_presets_are_the_articles_exact_models() -> None:
    cifar = _preset_plan("seed-cifar10-mlp")
    assert [layer.label() for layer in cifar.layers] == [
        "Flatten", "Dense 3000 relu", "Dense 1000 relu", "Dense 10 sigmoid",
    ]
    assert cifar.params == (3072 * 3000 + 3000) + (3000 * 1000 + 1000) + (1000 * 10 + 10) == 12_230_010
    assert (cifar.loss, cifar.from_logits, cifar.size, cifar.family) == ("categorical_crossentropy", False, None, "mlp")
    assert (PRESETS["seed-cifar10-mlp"].optimizer, PRESETS["seed-cifar10-mlp"].learning_rate) == ("sgd", 0.01)

    mnist = _preset_plan("seed-mnist-dense")
    assert [layer.label() for layer in mnist.layers] == ["Flatten", "Dense 128 relu", "Dense 10"]
    assert mnist.params == 101_770
    assert (mnist.loss, mnist.from_logits) == ("sparse_categorical_crossentropy", True)
    assert PRESETS["seed-mnist-dense"].optimizer == "adam"

    text = _preset_plan("seed-text")
    assert [layer.label() for layer in text.layers] == [
        "Embedding 10000x16", "Dropout 0.2", "GlobalAvgPool1D", "Dropout 0.2", "Dense 1",
    ]
    assert text.params == IMDB_VOCAB * 16 + 17
    assert (text.loss, text.from_logits, text.family) == ("binary_crossentropy", True, "text")


def test_preset_ignores_size() -> None:
    assert plan("seed-mnist-dense", "xl", MNIST_SHAPE, 10) == plan("seed-mnist-dense", None, MNIST_SHAPE, 10)


def test_plan_is_frozen_and_hashable() -> None:
    p = plan("cnn", "xs", MNIST_SHAPE, 10)
    assert hash(p) == hash(plan("cnn", "xs", MNIST_SHAPE, 10))
    with pytest.raises(AttributeError):
        p.params = 0  # type: ignore[misc]


# --- errors and compatibility ---------------------------------------------------------------------------------------


def test_unknown_family_lists_allowed_models() -> None:
    with pytest.raises(ModelError, match=r"Unknown model 'resnet'.*mlp, cnn, text.*seed-cifar10-mlp"):
        plan("resnet", "s", MNIST_SHAPE, 10)


def test_unknown_size_lists_allowed_sizes() -> None:
    with pytest.raises(ModelError, match=r"Unknown size 'xxl'.*xs, s, m, l, xl"):
        plan("mlp", "xxl", MNIST_SHAPE, 10)
    with pytest.raises(ModelError, match=r"Unknown size None"):
        plan("cnn", None, MNIST_SHAPE, 10)


@pytest.mark.parametrize("model", ["text", "seed-text"])
def test_text_model_on_image_data_names_the_fitting_datasets(model: str) -> None:
    with pytest.raises(ModelError, match=r"IMDB.*pick 'mlp' or 'cnn'"):
        plan(model, "s", MNIST_SHAPE, 10)


@pytest.mark.parametrize("model", ["mlp", "cnn", "seed-cifar10-mlp", "seed-mnist-dense"])
def test_image_model_on_token_data_names_the_fitting_datasets(model: str) -> None:
    with pytest.raises(ModelError, match=r"MNIST.*pick 'text' or 'seed-text'"):
        plan(model, "s", IMDB_SHAPE, 2, vocab_size=IMDB_VOCAB)


def test_cnn_needs_rank_three_images() -> None:
    with pytest.raises(ModelError, match=r"\(height, width, channels\).*\(28, 28\)"):
        plan("cnn", "xs", (28, 28), 10)
    assert plan("mlp", "xs", (28, 28), 10).params == 784 * 32 + 32 + 330


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"input_shape": (), "num_classes": 10}, "non-empty tuple of positive ints"),
        ({"input_shape": (28, 0, 1), "num_classes": 10}, "non-empty tuple of positive ints"),
        ({"input_shape": "abc", "num_classes": 10}, "tuple of positive ints"),
        ({"input_shape": MNIST_SHAPE, "num_classes": 1}, "num_classes must be an int >= 2"),
        ({"input_shape": MNIST_SHAPE, "num_classes": 10, "vocab_size": 1}, "vocab_size must be an int >= 2"),
    ],
)
def test_bad_shapes_and_counts_raise(kwargs: dict[str, object], pattern: str) -> None:
    with pytest.raises(ModelError, match=pattern):
        plan("mlp", "xs", **kwargs)  # type: ignore[arg-type]


def test_seed_text_needs_two_classes() -> None:
    with pytest.raises(ModelError, match=r"binary classifier.*4 classes"):
        plan("seed-text", None, IMDB_SHAPE, 4, vocab_size=IMDB_VOCAB)


def test_model_error_is_a_value_error() -> None:
    assert issubclass(ModelError, ValueError)


def test_compatible_matrix() -> None:
    expected = {
        ("mlp", "image"): True, ("mlp", "text"): False,
        ("cnn", "image"): True, ("cnn", "text"): False,
        ("text", "image"): False, ("text", "text"): True,
        ("seed-cifar10-mlp", "image"): True, ("seed-mnist-dense", "text"): False,
        ("seed-text", "text"): True, ("seed-text", "image"): False,
    }
    assert {key: compatible(*key) for key in expected} == expected
    assert compatible("cnn", "image", (28, 28, 1)) and not compatible("cnn", "image", (784,))
    assert compatible("text", "text", (250,)) and not compatible("text", "text", (25, 10))
    with pytest.raises(ModelError, match="Unknown model"):
        compatible("vgg", "image")
    with pytest.raises(ModelError, match="image, text"):
        compatible("mlp", "audio")


def test_planning_never_imports_a_framework() -> None:
    code = (
        "import sys\n"
        "import bench.plans.models as m\n"
        "for f in m.FAMILIES:\n"
        "    for s in m.SIZES:\n"
        "        shape, vocab = ((250,), 1000) if f == 'text' else ((28, 28, 1), None)\n"
        "        m.plan(f, s, shape, 10 if vocab is None else 2, vocab_size=vocab).describe()\n"
        "m.plan('seed-text', None, (250,), 2, vocab_size=1000)\n"
        "m.compatible('cnn', 'image')\n"
        "loaded = sorted(n for n in ('keras', 'tensorflow', 'jax', 'torch') if n in sys.modules)\n"
        "print('LOADED=' + ','.join(loaded))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED=\n" in result.stdout, result.stdout


# --- Keras builds ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keras_module():  # type: ignore[no-untyped-def]
    return pytest.importorskip("keras", reason="Keras 3 is not installed in this environment")


def _assert_build_matches(keras_module, p: ModelPlan) -> None:  # type: ignore[no-untyped-def]
    model = build(p)
    assert isinstance(model, keras_module.Model)
    assert model.name == p.name
    assert model.count_params() == p.params, p.describe()
    output_classes = 1 if p.loss == "binary_crossentropy" else p.num_classes
    assert tuple(model.output_shape) == (None, output_classes)
    built_shapes = [tuple(layer.output.shape[1:]) for layer in model.layers[1:]]
    assert built_shapes == list(p.layer_output_shapes), p.name
    keras_module.backend.clear_session()


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_build_param_count_matches_plan(keras_module, family: str, size: str) -> None:  # type: ignore[no-untyped-def]
    _assert_build_matches(keras_module, _family_plan(family, size))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PRESETS))
def test_build_preset_param_count_matches_plan(keras_module, name: str) -> None:  # type: ignore[no-untyped-def]
    _assert_build_matches(keras_module, _preset_plan(name))


@pytest.mark.slow
def test_build_small_odd_shapes(keras_module) -> None:  # type: ignore[no-untyped-def]
    # Pooling is skipped once the map is below 2x2; the plan's shapes must still match Keras exactly.
    _assert_build_matches(keras_module, plan("cnn", "l", (5, 3, 2), 4))
    _assert_build_matches(keras_module, plan("mlp", "xs", (4,), 3))


@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", "cnn", "text", "seed-text", "seed-cifar10-mlp"])
def test_built_model_compiles_and_fits_one_step(keras_module, model: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    batch = 8
    if model in ("text", "seed-text"):
        p = plan(model, "xs", (12,), 2, vocab_size=50)
        x = rng.integers(0, 50, size=(batch, 12)).astype("int32")
        y = rng.integers(0, 2, size=(batch,))
    elif model == "seed-cifar10-mlp":
        p = plan(model, None, (8, 8, 3), 10)
        x = rng.random((batch, 8, 8, 3), dtype=np.float32)
        y = np.eye(10, dtype="float32")[rng.integers(0, 10, size=batch)]  # one-hot labels for categorical CE
    else:
        p = plan(model, "xs", (12, 12, 1), 10)
        x = rng.random((batch, 12, 12, 1), dtype=np.float32)
        y = rng.integers(0, 10, size=(batch,))
    net = build(p)
    net.compile(optimizer="sgd", loss=keras_build.build_loss(p), metrics=keras_build.build_metrics(p))
    history = net.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    assert math.isfinite(history.history["loss"][0])
    assert 0.0 <= history.history["accuracy"][0] <= 1.0
    keras_module.backend.clear_session()


@pytest.mark.slow
def test_build_loss_matches_plan(keras_module) -> None:  # type: ignore[no-untyped-def]
    loss = keras_build.build_loss(_preset_plan("seed-cifar10-mlp"))
    assert isinstance(loss, keras_module.losses.CategoricalCrossentropy)
    assert loss.get_config()["from_logits"] is False
    loss = keras_build.build_loss(_preset_plan("seed-text"))
    assert isinstance(loss, keras_module.losses.BinaryCrossentropy) and loss.get_config()["from_logits"] is True
    [metric] = keras_build.build_metrics(_preset_plan("seed-text"))
    assert isinstance(metric, keras_module.metrics.BinaryAccuracy) and metric.get_config()["threshold"] == 0.0


def test_every_family_and_preset_has_its_layers_in_the_table():
    """plan() builds from two tables; a family or preset added without its layers would fail only when chosen."""
    assert set(models._FAMILY_LAYERS) == set(models.FAMILIES)
    assert set(models._PRESET_LAYERS) == set(models.PRESETS)
