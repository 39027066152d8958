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


def build_bert_graph(model_dir: Path) -> bytes:
    """The serialised ONNX model of the BERT mean-pooling encoder in ``model_dir``.

    Deterministic: the same weights and ``onnx`` version give the same bytes.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = read_bert_shape(model_dir)
    weights = _load_weights(model_dir)
    hidden = shape.hidden_size

    def weight(name: str) -> Any:
        try:
            return np.ascontiguousarray(weights[name], dtype=np.float32)
        except KeyError:
            raise EmbeddingError(f"{str(model_dir)!r}: the weights lack {name!r}") from None

    initializers: list[Any] = []
    nodes: list[Any] = []

    def constant(name: str, value: Any) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    typed: list[Any] = []

    def node(
        op: str, inputs: list[str], output: str, domain: str = "", width: int = 0, **attrs: Any
    ) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        if width:
            # Shape inference stops at the contrib operators: state the types of the hidden
            # states (batch x length x width), which the int8 quantiser needs.
            typed.append(
                helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "length", width])
            )
        return output

    # Embeddings: word + position + token type 0, then a layer norm.
    word = constant("word_embeddings", weight("embeddings.word_embeddings.weight"))
    positions = (
        weight("embeddings.position_embeddings.weight")
        + weight("embeddings.token_type_embeddings.weight")[0]
    )
    position_table = constant("position_embeddings", positions)
    ids_shape = node("Shape", ["input_ids"], "ids_shape")
    length = node(
        "Slice",
        [
            ids_shape,
            constant("one", np.array([1], np.int64)),
            constant("two", np.array([2], np.int64)),
        ],
        "length",
    )
    zero = constant("zero", np.array([0], np.int64))
    position_rows = node("Slice", [position_table, zero, length, zero], "position_rows")
    tokens = node("Gather", [word, "input_ids"], "token_vectors")
    summed = node("Add", [tokens, position_rows], "embedding_sum")
    x = node(
        "LayerNormalization",
        [
            summed,
            constant("embeddings_ln_gamma", weight("embeddings.LayerNorm.weight")),
            constant("embeddings_ln_beta", weight("embeddings.LayerNorm.bias")),
        ],
        "embedding_output",
        axis=-1,
        epsilon=shape.layer_norm_eps,
    )
    mask32 = node("Cast", ["attention_mask"], "mask_int32", to=TensorProto.INT32)

    def dense(x: str, layer: str, weight_name: str, output: str, width: int) -> str:
        """``x`` times a torch Linear's weight (stored [out, in]; ONNX MatMul wants [in, out])."""
        return node(
            "MatMul", [x, constant(weight_name, weight(layer + ".weight").T)], output, width=width
        )

    def skip_norm(x: str, skip: str, layer: str, name: str, bias_name: str, output: str) -> str:
        """LayerNorm(x + skip + the preceding dense layer's bias), fused."""
        return node(
            "SkipLayerNormalization",
            [
                x,
                skip,
                constant(f"{name}_ln_gamma", weight(layer + ".LayerNorm.weight")),
                constant(f"{name}_ln_beta", weight(layer + ".LayerNorm.bias")),
                constant(bias_name, weight(layer + ".dense.bias")),
            ],
            output,
            width=hidden,
            domain=_MS_DOMAIN,
            epsilon=shape.layer_norm_eps,
        )

    for i in range(shape.num_layers):
        p = f"encoder.layer.{i}."
        # torch Linear stores [out, in]; ONNX MatMul wants [in, out].
        qkv_weight = np.concatenate(
            [weight(p + f"attention.self.{n}.weight").T for n in ("query", "key", "value")],
            axis=1,
        )
        qkv_bias = np.concatenate(
            [weight(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")]
        )
        context = node(
            "Attention",
            [x, constant(f"l{i}_qkv_w", qkv_weight), constant(f"l{i}_qkv_b", qkv_bias), mask32],
            f"l{i}_context",
            width=hidden,
            domain=_MS_DOMAIN,
            num_heads=shape.num_heads,
        )
        projected = dense(
            context,
            p + "attention.output.dense",
            f"l{i}_attn_out_w",
            f"l{i}_attn_projected",
            hidden,
        )
        x = skip_norm(
            projected,
            x,
            p + "attention.output",
            f"l{i}_attn",
            f"l{i}_attn_out_b",
            f"l{i}_attention_output",
        )
        up = dense(
            x, p + "intermediate.dense", f"l{i}_ffn_up_w", f"l{i}_ffn_up", shape.intermediate_size
        )
        activated = node(
            "BiasGelu",
            [up, constant(f"l{i}_ffn_up_b", weight(p + "intermediate.dense.bias"))],
            f"l{i}_ffn_gelu",
            width=shape.intermediate_size,
            domain=_MS_DOMAIN,
        )
        down = dense(activated, p + "output.dense", f"l{i}_ffn_down_w", f"l{i}_ffn_down", hidden)
        x = skip_norm(down, x, p + "output", f"l{i}_ffn", f"l{i}_ffn_down_b", f"l{i}_output")

    # Mean pooling over the tokens whose mask is 1 (sentence-transformers' Pooling module).
    mask = node("Cast", ["attention_mask"], "mask_float", to=TensorProto.FLOAT)
    mask3 = node("Unsqueeze", [mask, constant("minus_one", np.array([-1], np.int64))], "mask3")
    masked = node("Mul", [x, mask3], "masked_states")
    total = node(
        "ReduceSum",
        [masked, constant("axis_one", np.array([1], np.int64))],
        "state_sum",
        keepdims=0,
    )
    count = node(
        "ReduceSum",
        [mask, constant("axis_one_b", np.array([1], np.int64))],
        "token_count",
        keepdims=1,
    )
    count = node("Max", [count, constant("min_count", np.array(1e-9, np.float32))], "count_floor")
    node("Div", [total, count], "sentence_embedding")

    graph = helper.make_graph(
        nodes,
        "bert_mean_pooling",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"]),
        ],
        outputs=[
            helper.make_tensor_value_info(
                "sentence_embedding", TensorProto.FLOAT, ["batch", hidden]
            ),
        ],
        initializer=initializers,
        value_info=typed,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET), helper.make_opsetid(_MS_DOMAIN, 1)],
        producer_name="memreader",
    )
    model.ir_version = 8
    return bytes(onnx.shape_inference.infer_shapes(model).SerializeToString())
