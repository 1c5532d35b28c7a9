"""Just enough of the ONNX protobuf format to write a model graph, without the ``onnx`` package.

An ONNX model is a protocol-buffers message (``onnx.proto``).  The E5 engine
builds one small graph (a few hundred nodes; the weights are not inside: they
are handed to ONNX Runtime separately, see :mod:`._e5_graph`), so writing the
few message types it needs by hand saves a 17 MB dependency.  Each function
returns the encoded bytes of one message; field numbers are those of
``onnx.proto`` (ONNX 1.x).  ``tests/embedders/test_e5_engine.py`` reads a graph
written here back with the ``onnx`` package and runs its checker.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["FLOAT", "INT64", "attribute", "model", "node", "tensor", "value_info"]

FLOAT = 1
"""TensorProto.DataType of float32."""
INT64 = 7
"""TensorProto.DataType of int64."""

_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return _key(field, 2) + _varint(len(raw)) + raw


def _float(field: int, value: float) -> bytes:
    import struct

    return _key(field, 5) + struct.pack("<f", value)


def attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    """An AttributeProto: a float, an int or a list of ints."""
    if isinstance(value, float):
        return _bytes(1, name) + _float(2, value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return _bytes(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    return _bytes(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(
    op_type: str,
    inputs: Iterable[str],
    outputs: Iterable[str],
    attributes: Iterable[bytes] = (),
    domain: str = "",
) -> bytes:
    """A NodeProto (``domain`` ``"com.microsoft"`` for ONNX Runtime's own operators)."""
    body = b"".join(_bytes(1, name) for name in inputs)
    body += b"".join(_bytes(2, name) for name in outputs)
    body += _bytes(4, op_type) + b"".join(_bytes(5, attr) for attr in attributes)
    return body + (_bytes(7, domain) if domain else b"")


def tensor(name: str, data_type: int, dims: Sequence[int], raw: bytes | None) -> bytes:
    """A TensorProto.

    ``raw=None`` declares the tensor's data *external* (at a location named
    after the tensor) without writing it: ONNX Runtime then takes it from
    ``SessionOptions.add_external_initializers``.
    """
    body = b"".join(_int(1, d) for d in dims) + _int(2, data_type) + _bytes(8, name)
    if raw is not None:
        return body + _bytes(9, raw)
    location = _bytes(1, "location") + _bytes(2, name)
    return body + _bytes(13, location) + _int(14, 1)


def value_info(name: str, data_type: int, dims: Sequence[int | str]) -> bytes:
    """A ValueInfoProto of a tensor; a str dimension is symbolic (``"batch"``)."""
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor_type = _int(1, data_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    name: str,
    nodes: Iterable[bytes],
    initializers: Iterable[bytes],
    inputs: Iterable[bytes],
    outputs: Iterable[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A ModelProto (IR version 8) holding one graph."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name)
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    body = _int(1, 8) + _bytes(7, graph)
    for domain, version in opsets.items():
        body += _bytes(8, (_bytes(1, domain) if domain else b"") + _int(2, version))
    return body
