"""History enrichment on two-turn conversations: which questions should carry the last turn?

Data (``../shared/quality-data``): ARCD (Arabic) and the public half of XQuAD
in English and in Arabic, each cut into chunks of ``--chunk-size`` characters
by the product's chunker (``bench/_quality_data.py``).  Every conversation has
two turns; the first is recorded with its answer (the dataset's answer span,
as an LLM's answer would carry it), the second is measured:

* **follow-up**: the first turn is a question that names the article's
  subject; the second is *another* question of the same paragraph that names
  the subject too, rewritten so that a pronoun stands for it (the rule, with
  examples printed by the bench: ``FollowUps.rewrite``).  Without the first
  turn it has lost the words that find its paragraph;
* **switch**: the same first turn, then an unmodified question of another
  article, chosen with a fixed seed.  The first turn can only pollute it.

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
from _quality_data import DATA, SEED, Corpus, Question, load_set, normalise
from bench_quality import engine_ranker, make_engine

from zerda_async import ContextEngineConfig, ConversationHistory
from zerda_async.core.followups import refers_back
from zerda_async.core.index.analysis import fold_arabic

MODES = ("never", "always", "refers_back")


def _set(text: str, sep: str | None = None) -> set[str]:
    """The words (or ``sep``-separated names) of ``text``, Arabic ones folded."""
    return {fold_arabic(item) for item in text.split(sep)}


# -- who each article is about --------------------------------------------------------------

# XQuAD: the subject's names as its questions write them (longest first), by hand from the
# titles, and the pronouns that stand for it: n(euter) it/its/ها, m(asculine) he/his/him/ه,
# p(lural) they/their/them/هم (Arabic: feminine ها for neuter things, as for most of them).
XQUAD_SUBJECTS: dict[str, tuple[str, list[str], list[str]]] = {
    "Super_Bowl_50": ("n", ["Super Bowl 50"], ["سوبر بول 50"]),
    "Normans": ("p", ["the Normans", "Normans"], ["النورمان"]),
    "Computational_complexity_theory": (
        "n",
        ["computational complexity theory", "complexity theory"],
        ["نظرية التعقيد الحسابي"],
    ),
    "Martin_Luther": ("m", ["Martin Luther", "Luther"], ["مارتن لوثر", "لوثر"]),
    "Sky_(United_Kingdom)": ("n", ["BSkyB", "Sky"], ["بي سكاي بي", "سكاي"]),
    "Huguenot": ("p", ["the Huguenots", "Huguenots"], ["الهوغونوتيون", "الهوغونوت"]),
    "Oxygen": ("n", ["oxygen"], ["الأكسجين"]),
    "Apollo_program": ("n", ["the Apollo program", "Apollo program"], ["برنامج أبولو"]),
    "Amazon_rainforest": (
        "n",
        ["the Amazon rainforest", "the Amazon"],
        ["غابة الأمازون", "الأمازون"],
    ),
    "Fresno,_California": ("n", ["Fresno"], ["فريسنو"]),
    "Black_Death": ("n", ["the Black Death"], ["الطاعون الأسود"]),
    "Newcastle_upon_Tyne": ("n", ["Newcastle"], ["نيوكاسل"]),
    "American_Broadcasting_Company": ("n", ["ABC"], ["أيه بي سي"]),
    "Pharmacy": ("n", ["pharmacy"], ["الصيدلة"]),
    "Civil_disobedience": ("n", ["civil disobedience"], ["العصيان المدني"]),
    "Private_school": ("p", ["private schools"], ["المدارس الخاصة"]),
    "Jacksonville,_Florida": ("n", ["Jacksonville"], ["جاكسونفيل"]),
    "Doctor_Who": ("n", ["Doctor Who"], ["الدكتور هو"]),
    "Yuan_dynasty": ("n", ["the Yuan dynasty", "the Yuan"], ["أسرة يوان", "يوان"]),
    "Intergovernmental_Panel_on_Climate_Change": (
        "n",
        ["the IPCC", "IPCC"],
        ["الفريق الحكومي الدولي المعني بتغير المناخ"],
    ),
    "Prime_number": ("p", ["prime numbers", "primes"], ["الأعداد الأولية"]),
    "Scottish_Parliament": ("n", ["the Scottish Parliament"], ["البرلمان الاسكتلندي"]),
    "Imperialism": ("n", ["imperialism"], ["الامبريالية"]),
    "French_and_Indian_War": ("n", ["the French and Indian War"], ["الحرب الفرنسية والهندية"]),
}

# ARCD: the title is the subject (without a "(...)" qualifier); these are masculine (ه/هو),
# the others feminine (ها/هي), "عرب" plural.
ARCD_MASCULINE = _set(
    "جمال خاشقجي|محمد|العراق|صلاح الدين الأيوبي|ألبرت أينشتاين|عمر المختار|لبنان|تقويم ميلادي"
    "|رجب طيب أردوغان|تامر حسني|ابن خلدون|السكري|صراع العروش|اضطراب وسواسي قهري"
    "|محمد بن إدريس الشافعي|توماس إديسون|عيسى بن مريم|الاتحاد السوفيتي|نادي الهلال|جرب"
    "|جبران خليل جبران|إيدز|تعداد السكان في العالم|التهاب الزائدة الدودية|العربي بن مهيدي"
    "|اضطراب ذو اتجاهين|بيتكوين|سل|بشار الأسد|أسد|الإسكندر الأكبر|المحقق كونان"
    "|دوري أبطال أفريقيا|باراسيتامول|بظر|عاشوراء",
    "|",
)

EN_PRONOUNS = {  # (subject, object, possessive)
    "n": ("it", "it", "its"),
    "m": ("he", "him", "his"),
    "p": ("they", "them", "their"),
}
AR_SUFFIX = {"n": "ها", "f": "ها", "m": "ه", "p": "هم"}
AR_PRONOUN = {"n": "هي", "f": "هي", "m": "هو", "p": "هم"}
EN_PREPOSITIONS = _set("of in on at to for from by with about after before during into")
AR_PREPOSITIONS = _set("في من عن على إلى مع حول بين لدى عند بعد قبل خلال")
AR_FUNCTION = _set("ما ماذا من متى أين كيف لماذا كم هل أي هو هي كان كانت هم ماهو ماهي")


@dataclass
class Subject:
    """An article's subject: its names in the questions, and its gender/number."""

    names: list[str]
    kind: str  # n, f, m or p


EN_AFTER_NAME = _set(
    "is was are were be been has have had do does did will would can could may might must"
    " in on at of to for from by with and or after before during when while since that which"
    " who whose where first last most also still ever never not"
)


def _ends_noun_phrase(following: str) -> bool:
    """Whether a name followed by ``following`` ends its noun phrase (a rough guess)."""
    if not following.isalpha() or following in EN_AFTER_NAME:
        return True
    return following.endswith(("ed", "s", "ing"))  # most likely a verb: "Luther translated"


def rewrite_en(question: str, subject: Subject) -> str | None:
    """The question with the first name of the subject replaced by a pronoun.

    Only a name that ends its noun phrase is replaced: followed by ``'s``, by
    the end of the question or a number, by a function word (``is``, ``did``,
    ``in``, ``that`` ...) or by a word ending like a verb (``-ed``, ``-s``,
    ``-ing``), not by another noun ("pharmacy *management*").
    ``<name>'s`` becomes the possessive (its, his, their); after a preposition
    the object form (it, him, them); elsewhere the subject form (it, he,
    they).  The first letter is capitalised again.  None: no such name.
    """
    subj, obj, poss = EN_PRONOUNS[subject.kind]
    for name in subject.names:
        pattern = rf"(?<![\w-]){re.escape(name)}(?![\w-])('s|’s)?"
        for found in re.finditer(pattern, question, re.IGNORECASE):
            rest = question[found.end() :].split()
            following = re.sub(r"\W", "", rest[0]).lower() if rest else ""
            if not found.group(1) and rest and not _ends_noun_phrase(following):
                continue
            before = question[: found.start()].split()
            if found.group(1):
                pronoun = poss
            elif before and before[-1].lower() in EN_PREPOSITIONS:
                pronoun = obj
            else:
                pronoun = subj
            text = question[: found.start()] + pronoun + question[found.end() :]
            return text[0].upper() + text[1:]
    return None


AR_WORD_END = re.compile(r"^(?:$|[\s؟?،,.!:؛\"»)])")
AR_PROCLITIC = ("و", "ف", "ب", "ل", "ك")


def rewrite_ar(question: str, subject: Subject) -> str | None:
    """The question with the first name of the subject replaced by an Arabic pronoun.

    A name counts as a whole word (also with the article ``ال`` before a name
    without one, and with quotes around it).  After a preposition word (``في عن
    على ...``) or a glued ``ل``/``ب`` it becomes the preposition's suffix
    (``فيها``, ``إليها``, ``لها``).  After a present-tense verb (a word
    opening with ``ي``) or a word that has a pronoun suffix already it is
    dropped, the verb carrying its subject ("ماذا يلقب؟", "ما الذي دعا إليه
    بعد ..."; a short word opening with ``ت`` counts as such a verb: "تقع").
    A name right after a definite word is its adjective ("النظرية الشيوعية")
    and is left alone.  After another word that is no question word it becomes that
    word's suffix (a noun in construct: ``عاصمة مصر`` -> ``عاصمتها``, ``ة``
    turning into ``ت``; a past-tense verb takes it as its object, which may be
    wrong: ``طرح أينشتاين`` -> ``طرحه``).  Elsewhere (first word, after a
    question word) the independent pronoun (``هي``, ``هو``, ``هم``).  None:
    no name.
    """
    suffix, pronoun = AR_SUFFIX[subject.kind], AR_PRONOUN[subject.kind]
    for name in subject.names:
        forms = [name] if name.startswith("ال") else ["ال" + name, name]
        for form in forms:
            for found in re.finditer(re.escape(form), question):
                head, tail = question[: found.start()], question[found.end() :]
                head = head[:-1] if head.endswith(('"', "«")) else head
                tail = tail[1:] if tail.startswith(('"', "»")) else tail
                if not AR_WORD_END.match(tail):
                    continue
                glued = head[-1:] if head[-1:] in AR_PROCLITIC else ""
                if head[len(head) - len(glued) - 1 : len(head) - len(glued)] not in ("", " "):
                    continue  # inside another word
                words = head.split()
                if not glued and words and words[-1].startswith(("ال", "لل", "بال", "وال")):
                    continue  # an adjective of a definite noun ("النظرية الشيوعية")
                return _replace_ar(head, glued, tail, suffix, pronoun)
    return None


def _replace_ar(head: str, glued: str, tail: str, suffix: str, pronoun: str) -> str:
    if glued in ("ل", "ب"):
        return head[:-1] + glued + suffix + tail
    if glued:  # و / ف / ك + name: the conjunction and the independent pronoun
        return head[:-1] + glued + pronoun + tail
    words = head.split()
    previous = fold_arabic(words[-1]) if words else None
    if previous is None or (previous in AR_FUNCTION and previous not in AR_PREPOSITIONS):
        return head + pronoun + tail
    present = previous[0] == "ي" or (previous[0] == "ت" and len(previous) <= 4)
    if previous not in AR_PREPOSITIONS and (
        (present and len(previous) > 2) or previous.endswith(("ه", "ها", "هم"))
    ):
        return " ".join(words) + tail  # a verb, or a word with a suffix: the name is dropped
    stem = words[-1]
    if stem.endswith("ة"):
        stem = stem[:-1] + "ت"
    elif stem.endswith("ى"):
        stem = stem[:-1] + "ي"
    return " ".join([*words[:-1], stem + suffix]) + tail


# -- conversations --------------------------------------------------------------------------


@dataclass
class Conversation:
    """A first turn (question, answer) and the measured second question."""

    first: str
    answer: str
    second: Question
    original: str  # the second question as the dataset asks it


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
        article_id = int(next(iter(q.relevant)).split("-")[1])
        by_article.setdefault(article_id, []).append(q)
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


def measure(sets: Sets, embedder: Any, use_vector: bool) -> dict[tuple[str, str], Tally]:
    """Tallies per (kind, mode); the modes run each conversation in turn (interleaved)."""
    engines = {}
    for mode in MODES:
        cfg = config(mode)
        cfg.retriever.use_vector = use_vector
        engines[mode] = make_engine(cfg, sets.corpus.chunks, embedder)
    rankers = {mode: engine_ranker(engine) for mode, engine in engines.items()}
    tallies: dict[tuple[str, str], Tally] = {}
    for kind, conversations in (("follow-up", sets.follow_ups), ("switch", sets.switches)):
        for conv in conversations:
            answers = [normalise(a) for a in conv.second.answers]
            for mode in MODES:
                engine = engines[mode]
                history = ConversationHistory(session_id="bench")
                history.add_turn(query=conv.first, answer=conv.answer)
                engine.set_conversation(history)
                result = engine.run(conv.second.text, record_turn=False)
                effective = result.query_analysis.original_query
                tally = tallies.setdefault((kind, mode), Tally())
                tally.count += 1
                tally.enriched += effective != conv.second.text
                tally.recall += bool(set(rankers[mode](effective)[:20]) & conv.second.relevant)
                tally.answered += any(a in normalise(result.context) for a in answers)
    return tallies


def rows(name: str, tallies: dict[tuple[str, str], Tally]) -> list[list[Any]]:
    out = []
    for (kind, mode), t in tallies.items():
        out.append(
            [
                name,
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


HEADERS = [
    "set",
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
    args = parser.parse_args()

    all_sets = [
        build(args.data / "arcd-train.json.gz", "ARCD (ar)", "ar", True, args.chunk_size),
        build(args.data / "xquad-en-public.json.gz", "XQuAD en", "xen", False, args.chunk_size),
        build(args.data / "xquad-ar-public.json.gz", "XQuAD ar", "xar", True, args.chunk_size),
    ]
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
        " interleaved per conversation, cache off.",
        "",
        "Rewriting examples:",
        *examples(all_sets, args.examples),
        *tables,
    ]
    output = "\n".join(text)
    print(output)
    write_summary("bench_followups", output)


if __name__ == "__main__":
    main()
