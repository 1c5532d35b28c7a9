"""History enrichment on two-turn conversations: which questions should carry the last turn?

Data (``../shared/quality-data``): ARCD (Arabic) and the public half of XQuAD
in English and in Arabic, each cut into chunks of ``--chunk-size`` characters
by the product's chunker (``bench/_quality_data.py``).  Every conversation has
two turns; the first is recorded with its answer (the dataset's answer span,
as an LLM's answer would carry it), the second is measured:

* **follow-up**: the first turn is a question that names the article's
  subject; the second is *another* question of the same paragraph that names
  the subject too, rewritten so that a pronoun stands for it (the rule, with
  examples printed by the bench: ``bench/_followup_rewrite.py``).  Without the first
  turn it has lost the words that find its paragraph;
* **switch**: the same first turn, then an unmodified question of another
  article, chosen with a fixed seed.  The first turn can only pollute it.

Tune/report split: every conversation belongs to the half of its measured
question's article (even articles: *tune*, odd: *report*).  The detector's
rules were adjusted looking only at the tune half (``--misses`` prints its
misses and false alarms); the report half is the held-out figure.  The
detector table also gives the share of *all* the dataset's original questions
of each half that it enriches (most of them stand alone).

Three ``history_enrichment`` modes, run on the same conversations, interleaved
(one engine each, same chunks): ``never``, ``always`` (the documented engine,
today) and ``refers_back`` (the recommended profile).  Measured on the second
turn: the share enriched, recall@20 of the ranked list of the query the engine
retrieved with (retrieve 20, filter, rank) and answer-in-context of its
``run()`` context at the profile's default budget.

Profile: recommended, keyword only (``--e5`` adds multilingual-e5-small from
``bench/_e5_vectors.py``; slow the first time: about 5 chunks/s, cached on disk).
"""

from __future__ import annotations

import argparse
import itertools
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, describe_load, describe_machine, format_table, write_summary
from _followup_rewrite import ARCD_MASCULINE, XQUAD_SUBJECTS, Subject, rewrite_ar, rewrite_en
from _quality_data import DATA, SEED, Corpus, Question, load_set, normalise
from _quality_engines import engine_ranker, make_engine

from zerda_async import ContextEngineConfig, ConversationHistory
from zerda_async.core.followups import refers_back
from zerda_async.core.index.analysis import fold_arabic

MODES = ("never", "always", "refers_back")


# -- conversations --------------------------------------------------------------------------


@dataclass
class Conversation:
    """A first turn (question, answer) and the measured second question."""

    first: str
    answer: str
    second: Question
    original: str  # the second question as the dataset asks it

    @property
    def half(self) -> str:
        """``tune`` or ``report``: the parity of the measured question's article."""
        return half(self.second)


def article_of(question: Question) -> int:
    """The index of the article a question of ``load_set`` was asked on."""
    return int(next(iter(question.relevant)).split("-")[1])


def half(question: Question) -> str:
    """``tune`` (even article) or ``report`` (odd article): see the module notes."""
    return "report" if article_of(question) % 2 else "tune"


@dataclass
class Sets:
    """One corpus, its follow-up and switch conversations, and the rewriting's coverage."""

    corpus: Corpus
    follow_ups: list[Conversation]
    switches: list[Conversation]
    named: int  # questions naming their article's subject


def _articles(path: Path) -> list[dict[str, Any]]:
    import gzip
    import json

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data: list[dict[str, Any]] = json.load(fh)["data"]
    return data


def build(path: Path, name: str, lang: str, arabic: bool, chunk_size: int) -> Sets:
    """Follow-ups and switches of one SQuAD-format file (see the module docstring)."""
    corpus = load_set(path, name, lang, chunk_size)
    by_text = {q.text: q for q in corpus.questions}
    articles = _articles(path)
    follow_ups: list[Conversation] = []
    firsts: list[tuple[int, str, str]] = []  # (article, question, answer)
    named = 0
    for a, article in enumerate(articles):
        title = article["title"]
        if lang == "ar":
            base = re.sub(r"\s*\(.*\)\s*$", "", title)
            kind = "p" if base == "عرب" else "m" if fold_arabic(base) in ARCD_MASCULINE else "f"
            subject = Subject([base], kind)
        else:
            kind, en_names, ar_names = XQUAD_SUBJECTS[title]
            subject = Subject(ar_names if arabic else en_names, kind)
        rewrite = rewrite_ar if arabic else rewrite_en
        for paragraph in article["paragraphs"]:
            asked = [
                (qa["question"], qa["answers"][0]["text"])
                for qa in paragraph["qas"]
                if qa["question"] in by_text
            ]
            naming = [(q, ans) for q, ans in asked if rewrite(q, subject) is not None]
            named += len(naming)
            # Pair each naming question with the previous one of the paragraph (the first
            # with the second): turn one names the subject, turn two is rewritten.
            for (first, answer), (second, _) in itertools.pairwise(naming):
                rewritten = rewrite(second, subject)
                assert rewritten is not None
                original = by_text[second]
                follow_ups.append(
                    Conversation(
                        first,
                        answer,
                        Question(rewritten, original.answers, original.relevant),
                        second,
                    )
                )
                firsts.append((a, first, answer))
    rng = random.Random(SEED)
    by_article: dict[int, list[Question]] = {}
    for q in corpus.questions:
        by_article.setdefault(article_of(q), []).append(q)
    switches = []
    for a, first, answer in firsts:
        other = rng.choice([k for k in by_article if k != a])
        second = rng.choice(by_article[other])
        switches.append(Conversation(first, answer, second, second.text))
    return Sets(corpus, follow_ups, switches, named)


# -- measuring --------------------------------------------------------------------------------


@dataclass
class Tally:
    """What one mode gives the second turns of one kind of conversation."""

    enriched: int = 0
    recall: int = 0
    answered: int = 0
    count: int = 0


def config(mode: str) -> ContextEngineConfig:
    cfg = ContextEngineConfig.recommended()
    cfg.history_enrichment = mode
    return cfg


def measure(sets: Sets, embedder: Any, use_vector: bool) -> dict[tuple[str, str, str], Tally]:
    """Tallies per (half, kind, mode); the modes run each conversation in turn (interleaved)."""
    engines = {}
    for mode in MODES:
        cfg = config(mode)
        cfg.retriever.use_vector = use_vector
        engines[mode] = make_engine(cfg, sets.corpus.chunks, embedder)
    rankers = {mode: engine_ranker(engine) for mode, engine in engines.items()}
    tallies: dict[tuple[str, str, str], Tally] = {}
    for kind, conversations in (("follow-up", sets.follow_ups), ("switch", sets.switches)):
        for conv in sorted(conversations, key=lambda c: c.half, reverse=True):
            answers = [normalise(a) for a in conv.second.answers]
            for mode in MODES:
                engine = engines[mode]
                history = ConversationHistory(session_id="bench")
                history.add_turn(query=conv.first, answer=conv.answer)
                engine.set_conversation(history)
                result = engine.run(conv.second.text, record_turn=False)
                effective = result.query_analysis.original_query
                tally = tallies.setdefault((conv.half, kind, mode), Tally())
                tally.count += 1
                tally.enriched += effective != conv.second.text
                tally.recall += bool(set(rankers[mode](effective)[:20]) & conv.second.relevant)
                tally.answered += any(a in normalise(result.context) for a in answers)
    return tallies


def rows(name: str, tallies: dict[tuple[str, str, str], Tally]) -> list[list[Any]]:
    out = []
    for (part, kind, mode), t in tallies.items():
        out.append(
            [
                name,
                part,
                kind,
                mode,
                t.count,
                f"{t.enriched / t.count:.1%}",
                f"{t.recall / t.count:.1%}",
                f"{t.answered / t.count:.1%}",
            ]
        )
    return out


def examples(all_sets: Sequence[Sets], count: int) -> list[str]:
    lines = []
    for sets in all_sets:
        for conv in random.Random(SEED).sample(sets.follow_ups, min(count, len(sets.follow_ups))):
            lines.append(
                f"- {sets.corpus.name}: turn 1 {conv.first!r} -> turn 2 {conv.original!r}"
                f" rewritten {conv.second.text!r} (refers_back: {refers_back(conv.second.text)})"
            )
    return lines


def _share(hits: int, count: int) -> str:
    return f"{hits}/{count} = {hits / count:.1%}" if count else "-"


def detector_rows(all_sets: Sequence[Sets]) -> list[list[Any]]:
    """Per set and half: what ``refers_back`` says of the follow-ups, the switches and every
    original question of the dataset (the questions stand alone, a few are underspecified)."""
    out: list[list[Any]] = []
    for sets in all_sets:
        for part in ("tune", "report"):
            groups = (
                [c.second for c in sets.follow_ups if c.half == part],
                [c.second for c in sets.switches if c.half == part],
                [q for q in sets.corpus.questions if half(q) == part],
            )
            hits = [_share(sum(refers_back(q.text) for q in g), len(g)) for g in groups]
            out.append([sets.corpus.name, part, *hits])
    return out


def misses(all_sets: Sequence[Sets]) -> list[str]:
    """The tune half's missed follow-ups and enriched originals (the report half stays unseen)."""
    lines = []
    for sets in all_sets:
        for conv in sets.follow_ups:
            if conv.half == "tune" and not refers_back(conv.second.text):
                lines.append(f"- {sets.corpus.name} missed follow-up: {conv.second.text}")
        for q in sets.corpus.questions:
            if half(q) == "tune" and refers_back(q.text):
                lines.append(f"- {sets.corpus.name} enriched original: {q.text}")
    return lines


DETECTOR_HEADERS = ["set", "half", "follow-ups caught", "switches enriched", "originals enriched"]

HEADERS = [
    "set",
    "half",
    "second turn",
    "history_enrichment",
    "conversations",
    "enriched",
    "recall@20",
    "answer in default ctx",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--chunk-size", type=int, default=400)
    parser.add_argument("--e5", action="store_true", help="also measure with e5 (slow)")
    parser.add_argument("--examples", type=int, default=4, help="rewriting examples per set")
    parser.add_argument(
        "--misses", action="store_true", help="print the tune half's misses and stop"
    )
    parser.add_argument(
        "--detector", action="store_true", help="print the detector table only (no engine)"
    )
    args = parser.parse_args()

    all_sets = [
        build(args.data / "arcd-train.json.gz", "ARCD (ar)", "ar", True, args.chunk_size),
        build(args.data / "xquad-en-public.json.gz", "XQuAD en", "xen", False, args.chunk_size),
        build(args.data / "xquad-ar-public.json.gz", "XQuAD ar", "xar", True, args.chunk_size),
    ]
    if args.misses:
        print("\n".join(misses(all_sets)))
        return
    detector = ["", "Detector (refers_back alone)", ""]
    detector.append(format_table(DETECTOR_HEADERS, detector_rows(all_sets)))
    if args.detector:
        print("\n".join(detector))
        return
    profiles: list[tuple[str, Any, bool]] = [("recommended, keyword only", None, False)]
    if args.e5:
        from _e5_vectors import E5Embedder, E5Vectors

        profiles.append(("recommended + e5", E5Embedder(E5Vectors()), True))
    tables = []
    for label, embedder, use_vector in profiles:
        table = []
        for sets in all_sets:
            table += rows(sets.corpus.name, measure(sets, embedder, use_vector))
            print(f"{label}: {sets.corpus.name} done", file=sys.stderr, flush=True)
        tables += ["", f"Profile: {label}", "", format_table(HEADERS, table)]
    coverage = "; ".join(
        f"{s.corpus.name}: {len(s.corpus.chunks):,} chunks, {s.named} questions name their"
        f" subject, {len(s.follow_ups)} follow-ups, {len(s.switches)} switches"
        for s in all_sets
    )
    text = [
        "# History enrichment on two-turn conversations (bench/bench_followups.py)",
        "",
        f"Machine: {describe_machine()}",
        f"Load: {describe_load()}",
        f"Command: {command_line()}",
        f"Method: chunks of at most {args.chunk_size} characters (split_text); {coverage}."
        " Turn 1 is recorded with its dataset answer; turn 2 is measured: recall@20 of the"
        " ranked list for the query the engine retrieved with (enriched or not), and"
        " answer-in-context of run() at the default budget. Follow-ups: a question of the same"
        " paragraph naming the subject, rewritten with a pronoun (rewrite_en / rewrite_ar);"
        f" switches: an unmodified question of another article (seed {SEED}). Modes"
        " interleaved per conversation, cache off. Halves: the measured question's article,"
        " even = tune (looked at while writing the rules), odd = report (held out).",
        "",
        "Rewriting examples:",
        *examples(all_sets, args.examples),
        *detector,
        *tables,
    ]
    output = "\n".join(text)
    print(output)
    write_summary("bench_followups", output)


if __name__ == "__main__":
    main()
