"""An ONNX graph of a BERT sentence encoder, written from its safetensors weights with numpy.

The bundled all-MiniLM-L6-v2 ships as PyTorch weights (``model.safetensors``). Instead of tracing
the model with torch, :func:`build_bert_graph` writes the encoder as an ONNX graph directly from
the weights: the embeddings, each layer's attention, feed-forward and layer norms, and the
model's mean pooling over real tokens. So building the file needs only ``numpy``,
``safetensors`` and ``onnx`` (no torch), takes about a second, and gives the same bytes every
time for the same weights and the same ``onnx`` version.

The graph uses the fused transformer operators of ONNX Runtime's CPU provider (``com.microsoft``
``Attention``, ``SkipLayerNormalization``, ``BiasGelu``), the same ones ONNX Runtime's own BERT
optimizer produces, so it runs as fast as an exported-then-optimised model; it therefore needs
ONNX Runtime to run. Its inputs are ``input_ids`` and ``attention_mask`` (int64, batch x
length; token type ids are always 0 for single texts and are folded into the position table)
and its output ``sentence_embedding`` (float32, batch x hidden) is the mean of the last hidden
states over the tokens whose mask is 1, before normalisation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memreader.embedders.model_io import check_model_file, read_model_json
from memreader.errors import EmbeddingError

__all__ = ["BertShape", "build_bert_graph", "read_bert_shape"]

_MS_DOMAIN = "com.microsoft"
_OPSET = 17


@dataclass(frozen=True)
class BertShape:
    """What the graph needs from the model's ``config.json``."""

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_positions: int
    vocab_size: int


def read_bert_shape(model_dir: Path) -> BertShape:
    """Read ``config.json`` of a BERT model directory; refuse anything but a plain BERT."""
    path = model_dir / "config.json"
    config = read_model_json(path)
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        raise EmbeddingError(
            f"{str(path)!r} is not a BERT model config; the onnx backend builds BERT encoders "
            "only (use the sentence_transformers backend for other models)"
        )
    if (
        config.get("hidden_act", "gelu") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise EmbeddingError(
            f"{str(path)!r}: only gelu activations and absolute positions are supported"
        )
    try:
        return BertShape(
            hidden_size=int(config["hidden_size"]),
            num_layers=int(config["num_hidden_layers"]),
            num_heads=int(config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
            max_positions=int(config["max_position_embeddings"]),
            vocab_size=int(config["vocab_size"]),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise EmbeddingError(f"{str(path)!r} lacks a BERT field: {e}") from e


def _load_weights(model_dir: Path) -> dict[str, Any]:
    from safetensors.numpy import load_file

    path = model_dir / "model.safetensors"
    check_model_file(path)
    try:
        weights = load_file(str(path))
    except Exception as e:  # safetensors raises its own error types for a bad file
        raise EmbeddingError(f"cannot read the model weights {str(path)!r}: {e}") from e
    # Checkpoints saved from BertModel have no prefix; from BertFor* they have "bert.".
    return {name.removeprefix("bert."): value for name, value in weights.items()}


class _GraphBuilder:
    """The nodes, initializers and typed values of the graph being written, in order, with the
    model's weights: the order of calls is the order in the file, so keep it to keep the bytes."""

    def __init__(self, model_dir: Path, shape: BertShape) -> None:
        self.model_dir = model_dir
        self.shape = shape
        self.weights = _load_weights(model_dir)
        self.initializers: list[Any] = []
        self.nodes: list[Any] = []
        self.typed: list[Any] = []

    def weight(self, name: str) -> Any:
        """The float32 weight ``name`` of the checkpoint."""
        import numpy as np

        try:
            return np.ascontiguousarray(self.weights[name], dtype=np.float32)
        except KeyError:
            raise EmbeddingError(f"{str(self.model_dir)!r}: the weights lack {name!r}") from None

    def constant(self, name: str, value: Any) -> str:
        """Add ``value`` as the initializer ``name``; its name."""
        import numpy as np
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(
        self,
        op: str,
        inputs: list[str],
        output: str,
        domain: str = "",
        width: int = 0,
        **attrs: Any,
    ) -> str:
        """Add an ``op`` node named after its one ``output``; the output's name."""
        from onnx import TensorProto, helper

        self.nodes.append(
            helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs)
        )
        if width:
            # Shape inference stops at the contrib operators: state the types of the hidden
            # states (batch x length x width), which the int8 quantiser needs.
            self.typed.append(
                helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "length", width])
            )
        return output

    def dense(self, x: str, layer: str, weight_name: str, output: str, width: int) -> str:
        """``x`` times a torch Linear's weight (stored [out, in]; ONNX MatMul wants [in, out])."""
        matrix = self.constant(weight_name, self.weight(layer + ".weight").T)
        return self.node("MatMul", [x, matrix], output, width=width)

    def skip_norm(
        self, x: str, skip: str, layer: str, name: str, bias_name: str, output: str
    ) -> str:
        """LayerNorm(x + skip + the preceding dense layer's bias), fused."""
        return self.node(
            "SkipLayerNormalization",
            [
                x,
                skip,
                self.constant(f"{name}_ln_gamma", self.weight(layer + ".LayerNorm.weight")),
                self.constant(f"{name}_ln_beta", self.weight(layer + ".LayerNorm.bias")),
                self.constant(bias_name, self.weight(layer + ".dense.bias")),
            ],
            output,
            width=self.shape.hidden_size,
            domain=_MS_DOMAIN,
            epsilon=self.shape.layer_norm_eps,
        )


def _embeddings(g: _GraphBuilder) -> str:
    """Word + position + token type 0 embeddings, then a layer norm; the output's name."""
    import numpy as np

    word = g.constant("word_embeddings", g.weight("embeddings.word_embeddings.weight"))
    positions = (
        g.weight("embeddings.position_embeddings.weight")
        + g.weight("embeddings.token_type_embeddings.weight")[0]
    )
    position_table = g.constant("position_embeddings", positions)
    ids_shape = g.node("Shape", ["input_ids"], "ids_shape")
    length = g.node(
        "Slice",
        [
            ids_shape,
            g.constant("one", np.array([1], np.int64)),
            g.constant("two", np.array([2], np.int64)),
        ],
        "length",
    )
    zero = g.constant("zero", np.array([0], np.int64))
    position_rows = g.node("Slice", [position_table, zero, length, zero], "position_rows")
    tokens = g.node("Gather", [word, "input_ids"], "token_vectors")
    summed = g.node("Add", [tokens, position_rows], "embedding_sum")
    return g.node(
        "LayerNormalization",
        [
            summed,
            g.constant("embeddings_ln_gamma", g.weight("embeddings.LayerNorm.weight")),
            g.constant("embeddings_ln_beta", g.weight("embeddings.LayerNorm.bias")),
        ],
        "embedding_output",
        axis=-1,
        epsilon=g.shape.layer_norm_eps,
    )


def _encoder_layer(g: _GraphBuilder, i: int, x: str, mask32: str) -> str:
    """Layer ``i``: fused attention, its projection and norm, the feed-forward and its norm."""
    import numpy as np

    p = f"encoder.layer.{i}."
    hidden, intermediate = g.shape.hidden_size, g.shape.intermediate_size
    # torch Linear stores [out, in]; ONNX MatMul wants [in, out].
    qkv_weight = np.concatenate(
        [g.weight(p + f"attention.self.{n}.weight").T for n in ("query", "key", "value")],
        axis=1,
    )
    qkv_bias = np.concatenate(
        [g.weight(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]
    )
    context = g.node(
        "Attention",
        [x, g.constant(f"l{i}_qkv_w", qkv_weight), g.constant(f"l{i}_qkv_b", qkv_bias), mask32],
        f"l{i}_context",
        width=hidden,
        domain=_MS_DOMAIN,
        num_heads=g.shape.num_heads,
    )
    projected = g.dense(
        context, p + "attention.output.dense", f"l{i}_attn_out_w", f"l{i}_attn_projected", hidden
    )
    x = g.skip_norm(
        projected,
        x,
        p + "attention.output",
        f"l{i}_attn",
        f"l{i}_attn_out_b",
        f"l{i}_attention_output",
    )
    up = g.dense(x, p + "intermediate.dense", f"l{i}_ffn_up_w", f"l{i}_ffn_up", intermediate)
    activated = g.node(
        "BiasGelu",
        [up, g.constant(f"l{i}_ffn_up_b", g.weight(p + "intermediate.dense.bias"))],
        f"l{i}_ffn_gelu",
        width=intermediate,
        domain=_MS_DOMAIN,
    )
    down = g.dense(activated, p + "output.dense", f"l{i}_ffn_down_w", f"l{i}_ffn_down", hidden)
    return g.skip_norm(down, x, p + "output", f"l{i}_ffn", f"l{i}_ffn_down_b", f"l{i}_output")


def _mean_pooling(g: _GraphBuilder, x: str) -> str:
    """The mean of the states over the tokens whose mask is 1 (sentence-transformers' Pooling
    module): the ``sentence_embedding`` output."""
    import numpy as np
    from onnx import TensorProto

    mask = g.node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
    mask3 = g.node("Unsqueeze", [mask, g.constant("minus_one", np.array([-1], np.int64))], "mask3")
    masked = g.node("Mul", [x, mask3], "masked_states")
    total = g.node(
        "ReduceSum",
        [masked, g.constant("axis_one", np.array([1], np.int64))],
        "state_sum",
        keepdims=0,
    )
    count = g.node(
        "ReduceSum",
        [mask, g.constant("axis_one_b", np.array([1], np.int64))],
        "token_count",
        keepdims=1,
    )
    count = g.node(
        "Max", [count, g.constant("min_count", np.array(1e-9, np.float32))], "count_floor"
    )
    return g.node("Div", [total, count], "sentence_embedding")


def build_bert_graph(model_dir: Path) -> bytes:
    """The serialised ONNX model of the BERT mean-pooling encoder in ``model_dir``.

    Deterministic: the same weights and ``onnx`` version give the same bytes.
    """
    import onnx
    from onnx import TensorProto, helper

    shape = read_bert_shape(model_dir)
    g = _GraphBuilder(model_dir, shape)
    x = _embeddings(g)
    mask32 = g.node("Cast", ["attention_mask"], "mask_int32", to=TensorProto.INT32)
    for i in range(shape.num_layers):
        x = _encoder_layer(g, i, x, mask32)
    _mean_pooling(g, x)

    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pooling",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        outputs=[
            helper.make_tensor_value_info(
                "sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden_size]
            ),
        ],
        initializer=g.initializers,
        value_info=g.typed,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS_DOMAIN, 1)],
        producer_name="memreader",
    )
    model.ir_version = 8
    return bytes(onnx.shape_inference.infer_shapes(model).SerializeToString())
