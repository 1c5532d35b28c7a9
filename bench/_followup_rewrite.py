"""The follow-up questions of ``bench_followups.py``: who each article is about, and the rule
that rewrites a question naming its subject into one with a pronoun (English and Arabic).

The rule is crude on purpose (no parser): it is written down here so the bench's
follow-ups can be judged; the bench prints examples of what it did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zerda_async.core.index.analysis import fold_arabic

__all__ = ["ARCD_MASCULINE", "XQUAD_SUBJECTS", "Subject", "rewrite_ar", "rewrite_en"]


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
