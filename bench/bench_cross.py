"""A cross-encoder from e5-small's own weights: does reading question and chunk together pay?

Issue 19: most of what keeps XQuAD's MRR@20 under target is the *sibling*
chunk of the answer's paragraph ranked first (``bench_misses.py``), and the
floor cannot tell cross-language answers from off-topic questions by
cosines alone.  Both are questions a model that reads the question and the
chunk in one sequence can answer.  This bench trains one from the wheel's
e5-small (``_cross_torch.CrossEncoder``: the lower layers frozen, the upper
``--tuned`` layers and a linear head trained; ``--tuned 0`` trains the head
alone on the frozen model's pair states) on the *tune* half of
``_cross_lists.py``'s candidate lists and measures it on the *held-out* half:

* **ranking**: the recommended profile's top ``--rerank`` chunks reordered by
  the cross-encoder's logit, MRR@20 per set against the profile as it is,
  with a paired 95% interval;
* **relevance**: the best logit of a question's top chunks as the floor's
  evidence, answerable questions against off-topic ones: AUC, and the share
  of answerable questions flagged when 97.5% of the off-topic ones are.

Training loss: per question, a softmax over its top ``--train-depth`` chunks'
logits and a fixed "none of them" logit of 0; the target is the relevant
chunks (shared equally), or "none" for an off-topic question.  So a logit
above 0 reads "answers it", and one model ranks and judges.

The trained layers and head are saved to ``bench/out/cross/cross-<tuned>.npz``
(float32, the ONNX graph's names).  The lower layers' states of every pair
are cached in ``bench/out/cross/`` (``--cached`` upper layers are left out of
the cache; delete the files after changing the lists).  Needs PyTorch, not a project dependency
(``bench/README.md``, the cross-encoder section):

    PYTHONPATH=$PWD .venv/bin/python bench/_cross_lists.py    # the lists (project venv)
    PYTHONPATH=$PWD /path/to/torch-venv/bin/python bench/bench_cross.py   # ~40 min on 2 cores
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import torch
from _common import describe_load, describe_machine, format_table, write_summary
from _cross_lists import LISTS, read_lists
from _cross_torch import CrossEncoder, cosine_schedule, pair_ids
from _quality_metrics import paired_delta, reciprocal

from zerda_async.embedders.e5_model import E5File, E5Tokenizer, model_path

OUT = LISTS.parent
Key = tuple[str, str]  # (question, chunk id)
Forward = Callable[[list[torch.Tensor]], torch.Tensor]  # a batch of pair states -> logits


def lower_states(
    encoder: CrossEncoder,
    tok: E5Tokenizer,
    records: Sequence[dict[str, Any]],
    depth: int,
    half: str,
) -> dict[Key, torch.Tensor]:
    """The frozen layers' states of every (question, top-``depth`` chunk) pair, cached on disk."""
    path = OUT / f"lower-{encoder.split}-{depth}-{half}.pt"
    if path.exists():
        cached: dict[Key, torch.Tensor] = torch.load(path)
        return cached
    rows: dict[Key, list[int]] = {}
    for r in records:
        for c in r["candidates"][:depth]:
            rows.setdefault((r["question"], c["id"]), pair_ids(tok, r["question"], c["text"]))
    keys = sorted(rows, key=lambda k: len(rows[k]))
    states: dict[Key, torch.Tensor] = {}
    started = time.perf_counter()
    for at in range(0, len(keys), 32):
        part = keys[at : at + 32]
        states.update(zip(part, encoder.lower([rows[k] for k in part]), strict=True))
        if at % 1024 == 0:
            rate = (at + len(part)) / (time.perf_counter() - started)
            print(f"  {half}: {at + len(part)}/{len(keys)} pairs ({rate:.1f}/s)", flush=True)
    torch.save(states, path)
    return states


def _target(record: dict[str, Any], depth: int) -> list[float] | None:
    """The loss's target over [none, chunk 1..depth], or None when the answer is not listed."""
    listed = [c["id"] in record["relevant"] for c in record["candidates"][:depth]]
    if not record["relevant"]:
        return [1.0] + [0.0] * len(listed)
    if not any(listed):
        return None
    share = 1.0 / sum(listed)
    return [0.0] + [share if hit else 0.0 for hit in listed]


def train(
    encoder: CrossEncoder,
    records: Sequence[dict[str, Any]],
    states: dict[Key, torch.Tensor],
    depth: int,
    epochs: int,
    rate: float,
    forward: Forward,
) -> None:
    """Fit the upper layers and the head (module notes: the loss)."""
    usable = [(r, t) for r in records if (t := _target(r, depth)) is not None]
    per_step = 8
    total = epochs * ((len(usable) + per_step - 1) // per_step)
    head = list(encoder.head.parameters())
    layers = [p for p in encoder.tuned_parameters() if all(p is not h for h in head)]
    groups = [{"params": layers}, {"params": head, "lr": rate * 30}]
    optimiser = torch.optim.AdamW(groups, lr=rate, weight_decay=0.01)
    base = [g["lr"] for g in optimiser.param_groups]
    rng = random.Random(20240611)
    step, started, running = 0, time.perf_counter(), 0.0
    encoder.train()
    for epoch in range(epochs):
        rng.shuffle(usable)
        for at in range(0, len(usable), per_step):
            part = usable[at : at + per_step]
            rows = [
                states[r["question"], c["id"]] for r, _ in part for c in r["candidates"][:depth]
            ]
            logits = forward(rows)
            loss = torch.zeros(())
            cursor = 0
            for _, target in part:
                n = len(target) - 1
                row = torch.cat([torch.zeros(1), logits[cursor : cursor + n]])
                cursor += n
                loss = loss - (torch.tensor(target) * torch.log_softmax(row, 0)).sum()
            loss = loss / len(part)
            factor = cosine_schedule(step, total, max(1, total // 20))
            for group, lr in zip(optimiser.param_groups, base, strict=True):
                group["lr"] = lr * factor
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(encoder.tuned_parameters(), 1.0)
            optimiser.step()
            value = float(loss.detach())
            running = 0.98 * running + 0.02 * value if step else value
            step += 1
            if step % 50 == 0:
                spent = time.perf_counter() - started
                print(
                    f"  epoch {epoch + 1} step {step}/{total} loss {running:.3f} "
                    f"({spent / step:.2f} s/step)",
                    flush=True,
                )
    encoder.eval()


@torch.inference_mode()  # type: ignore[untyped-decorator]
def score(
    records: Sequence[dict[str, Any]],
    states: dict[Key, torch.Tensor],
    depth: int,
    forward: Forward,
) -> list[list[float]]:
    """Each record's logits for its top ``depth`` chunks."""
    out = []
    for r in records:
        rows = [states[r["question"], c["id"]] for c in r["candidates"][:depth]]
        out.append(forward(rows).tolist() if rows else [])
    return out


@torch.inference_mode()  # type: ignore[untyped-decorator]
def pooled_states(
    encoder: CrossEncoder, states: dict[Key, torch.Tensor]
) -> dict[Key, torch.Tensor]:
    """Every pair's mean last state through the (all frozen) upper layers: ``--tuned 0``
    trains the head alone, so the layers run once per pair."""
    keys = sorted(states, key=lambda k: states[k].shape[0])
    out: dict[Key, torch.Tensor] = {}
    for at in range(0, len(keys), 64):
        part = keys[at : at + 64]
        out.update(zip(part, encoder.pooled([states[k] for k in part]), strict=True))
    return out


def first_rank(ids: Sequence[str], relevant: Sequence[str]) -> int | None:
    return next((i + 1 for i, d in enumerate(ids) if d in relevant), None)


def reranked(record: dict[str, Any], logits: Sequence[float], depth: int) -> list[str]:
    """The profile's 20 ids with the top ``depth`` reordered by logit (stable on ties)."""
    top = [c["id"] for c in record["candidates"][:depth]]
    order = sorted(range(len(top)), key=lambda i: -logits[i])
    rest: list[str] = record["listed"][len(top) :]
    return [top[i] for i in order] + rest


def ranking_rows(
    records: Sequence[dict[str, Any]], logits: Sequence[Sequence[float]], depth: int
) -> list[list[str]]:
    """Per set: n, MRR@20 of the profile, reranked, and the paired change."""
    by_set: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r["relevant"]:
            by_set[r["set"]].append(i)
    rows = []
    for name, idx in by_set.items():
        base = [first_rank(records[i]["listed"], records[i]["relevant"]) for i in idx]
        new = [
            first_rank(reranked(records[i], logits[i], depth), records[i]["relevant"]) for i in idx
        ]
        gain, width = paired_delta(new, base)
        mrr_b = sum(map(reciprocal, base)) / len(idx)
        mrr_n = sum(map(reciprocal, new)) / len(idx)
        rows.append(
            [name, str(len(idx)), f"{mrr_b:.3f}", f"{mrr_n:.3f}", f"{gain:+.3f} ± {width:.3f}"]
        )
    return rows


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a positive scores above a negative), ties counted half."""
    p, n = np.asarray(pos), np.asarray(neg)
    if not len(p) or not len(n):
        return float("nan")
    greater = (p[:, None] > n[None, :]).mean()
    ties = (p[:, None] == n[None, :]).mean()
    return float(greater + 0.5 * ties)


def relevance_rows(
    records: Sequence[dict[str, Any]], logits: Sequence[Sequence[float]]
) -> list[list[str]]:
    """Per set: the best logit's AUC (answerable vs off-topic) and false flags at 97.5%."""
    best: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for r, row in zip(records, logits, strict=True):
        name = r["set"].removesuffix(" (off-topic)")
        value = max(row) if row else -1e9
        best[name][0 if r["relevant"] else 1].append(value)
    rows = []
    for name, (pos, neg) in best.items():
        if not neg:
            continue
        cut = float(np.quantile(neg, 0.975))
        flagged = sum(v <= cut for v in pos) / len(pos)
        at_zero = (sum(v <= 0 for v in pos) / len(pos), sum(v <= 0 for v in neg) / len(neg))
        rows.append(
            [
                name,
                f"{len(pos)} / {len(neg)}",
                f"{auc(pos, neg):.3f}",
                f"{flagged:.1%}",
                f"{at_zero[0]:.1%} / {at_zero[1]:.1%}",
            ]
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tuned", type=int, default=4, help="upper layers trained (0: the head)")
    parser.add_argument("--cached", type=int, default=4, help="upper layers not cached (>= tuned)")
    parser.add_argument(
        "--train-depth", type=int, default=4, help="chunks per question in the loss"
    )
    parser.add_argument("--rerank", type=int, default=4, help="top chunks reordered")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rate", type=float, default=3e-5, help="learning rate of the layers")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if not 0 <= args.tuned <= args.cached <= 12:
        parser.error("need 0 <= --tuned <= --cached <= 12")
    torch.set_num_threads(args.threads)
    torch.manual_seed(20240611)
    started = time.perf_counter()
    model = E5File(model_path())
    tok = E5Tokenizer(model)
    encoder = CrossEncoder(model, args.tuned, model.layers - args.cached)
    records = read_lists()
    halves = {h: [r for r in records if r["half"] == h] for h in ("tune", "held-out")}
    depth = max(args.train_depth, args.rerank)
    states = {h: lower_states(encoder, tok, halves[h], depth, h) for h in halves}
    forward: Forward = encoder.upper
    if args.tuned == 0:
        states = {h: pooled_states(encoder, states[h]) for h in halves}

        def forward(rows: list[torch.Tensor]) -> torch.Tensor:
            out: torch.Tensor = encoder.head(torch.stack(rows)).squeeze(-1)
            return out

    train(
        encoder, halves["tune"], states["tune"], args.train_depth, args.epochs, args.rate, forward
    )
    weights = encoder.tuned_weights()
    np.savez(OUT / f"cross-{args.tuned}.npz", **weights)
    parts = [
        "# A cross-encoder from e5-small's weights (bench_cross.py)",
        "",
        describe_machine(),
        describe_load(),
        f"- {' '.join(sys.argv[1:]) or 'defaults'}; {time.perf_counter() - started:.0f} s",
    ]
    for half in ("tune", "held-out"):
        logits = score(halves[half], states[half], depth, forward)
        parts += [
            "",
            f"## {half}: MRR@20, the profile's top {args.rerank} reordered by the cross-encoder",
            "",
            format_table(
                ["set", "n", "profile", "reranked", "change (95%)"],
                ranking_rows(halves[half], logits, args.rerank),
            ),
            "",
            f"## {half}: the best logit of the top {depth} as relevance evidence",
            "",
            format_table(
                [
                    "set",
                    "answerable / off-topic",
                    "AUC",
                    "false flags at 97.5% flagged",
                    "flagged at logit 0 (answerable / off-topic)",
                ],
                relevance_rows(halves[half], logits),
            ),
        ]
    text = "\n".join(parts)
    print(text)
    write_summary("cross", text)


if __name__ == "__main__":
    main()
