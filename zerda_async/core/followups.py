"""Does a question refer back to the conversation?  Arabic and English rules, no model.

The history enrichment (``ContextEngineConfig.history_enrichment``) prefixes a
session's question with its last answered turns.  That helps a follow-up that
cannot be understood alone ("when was *it* founded?", "and the second one?",
"ماذا عن عاصمتها؟") and hurts a question on another subject, which then
retrieves the previous subject's chunks first.  :func:`refers_back` tells the
two apart with a handful of rules that would rather miss a reference than see
one that is not there:

English
  * a third-person pronoun (``he him his she her hers they them their theirs
    it its``) with no name before it in the question that it could stand for
    (a capitalised word: "how old was *Manning* when he ..."), or stranded at
    the end after a preposition ("... in favour of it?"); an
    impersonal ``it`` ("it is possible to", "is it true", "how long does it
    take to", "what is it called") never counts;
  * ``this these those`` anywhere; ``that`` only where it cannot be a relative
    or a conjunction (first or last word, or after a preposition or a form of
    *be*/*do*: "after that", "when was that built"); ``there`` unless
    existential ("are there ...", "there were ..."); ``the same``, ``the
    former``, ``the latter`` not followed by a noun;
  * ellipsis: a question opening with ``and``, ``but``, ``also``, ``what
    about``, ``how about`` or ``what else``, or a short one (at most four
    words) with no content word ("Why?", "How many?", "Which year?").

Arabic (tashkeel, tatweel and alef forms ignored)
  * a demonstrative (``هذا هذه هذان هاتان هؤلاء ذلك تلك ذاك أولئك``), also
    with ``و ف ب ل ك`` glued on, but not the connectives ``لذلك كذلك``;
  * an independent pronoun (``هو هي هم هما هن``) that opens the question,
    follows ``هل`` or ``لماذا``, carries ``و``/``ف``, or closes it ("من هو؟");
    not the copula of "ما هو التعلم الآلي؟" or "الأكسجين هو ...", nor
    "الدكتور هو";
  * a pronoun suffix (``ه ها هم هما هن``) on a preposition (``فيها منه عنهم
    به عليه إليها معه بعدها ...``); ``ها هم هما`` on any other word of at
    least five letters without the article ("عاصمتها", "مؤسسهم"), except
    quantifiers (``كلها جميعها نفسها ...``) and words that end so by
    themselves (``يساهم دراهم``); ``ه`` on a word of at least four letters
    without the article, unless ``ا ي و ب`` precedes it, as in the words
    whose root ends in ``ه`` (``اتجاه تنبيه مكروه تشابه``): "عمره", "وفاته".
    The first suffix after a relative pronoun (``الذي التي ...``, the
    interrogative ``ما الذي`` included: "ما الذي دعا إليه") does not count:
    it resumes a noun of the sentence; nor does one after three content
    words (one of them is most likely what it points to: "بدأ ثامر حسني
    مسيرته"; after two it still counts: "كم بلد شارك فيها؟"), nor a possessive
    "لديه"/"لها" right after ``من`` ("من لديه الرقم القياسي؟", who has) or
    after a noun ("جامعة لها أصل");
  * ellipsis: a question opening with ``و`` + an interrogative (``وماذا``,
    ``ومتى``, ``وما``, ``ومن`` ...) or with ``ماذا عن``; a short one (at most
    three words) with no content word; or ``متى``/``كيف``/``لماذا`` + one word
    without the article ("متى تأسست؟": the subject is left to the verb).

Known misses: a suffix after ``ا ي و ب`` ("معناه", "أبيه", "كتابه"), a
question whose subject is only implied by its verb beyond two words ("أين
تعلم القراءة؟"), a definite description ("when was the company founded?").
Known false alarms: a name ending in ``ه`` ("أدرنه"), a ``ة`` written ``ه``, a
suffix pointing to a name two words before ("متى وسع لوثر تهجمه؟").
"""

from __future__ import annotations

import re

from .index.analysis import fold_arabic

__all__ = ["refers_back"]


def _words(text: str) -> frozenset[str]:
    """The space-separated words of ``text``, Arabic ones folded as queries are."""
    return frozenset(fold_arabic(word) for word in text.split())


_EN_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_AR_WORD = re.compile(r"[\u0621-\u064a0-9\u0660-\u0669]+")

# -- English ------------------------------------------------------------------------------

_EN_PRONOUNS = _words("he him his she her hers they them their theirs it its")
_EN_DEMONSTRATIVES = _words("this these those")
_EN_BE_DO = _words(
    "is was are were be been being 's am do does did has have had will would can could"
)
_EN_PREPOSITIONS = _words(
    "about after before of in on at from by for with during since like to into"
    " than under over through without against besides"
)
_EN_EXISTENTIAL = _words("is are was were be been 's exist exists existed remain remains")
_EN_IMPERSONAL = re.compile(
    r"\b(?:it\s+(?:is|was|'s|has\s+been|will\s+be|would\s+be)\s+\w+\s+(?:to|that|for)\b"
    r"|is\s+it\s+(?:true|possible|necessary|likely|important|known)\b"
    r"|it\s+(?:takes?|took)(?:\s+\w+){0,2}\s+to\b"
    r"|is\s+it\s+called\b|does\s+it\s+mean\b)"
)
_EN_OPENERS = ("and ", "but ", "also ", "what about ", "how about ", "what else")
_EN_FUNCTION = _words(
    "a an the what which who whom whose when where why how is was are were be been do does"
    " did has have had can could will would should shall may might must of in on at to for"
    " from by with about and or but also so then else again now more most many much long"
    " often old exactly really any some one ones other another year years time date day"
    " place name number reason kind type way people thing things"
)
_EN_SHORT = 4


def _english_antecedents(words: list[str]) -> list[bool]:
    """Per word: is there a name before it that a third-person pronoun could stand for?

    A name is a capitalised word (the first word only when it is no function
    word): "how old was *Manning* when he played?".  Common nouns are not
    counted: "what artist provided the woodcuts for his Bible?" is a follow-up
    (counting a noun after a determiner as an antecedent missed 12% of the
    English follow-ups of ``bench/bench_followups.py`` and spared 0.2% of the
    stand-alone questions).
    """
    named, marks = False, []
    for word in words:
        lower = word.casefold()
        marks.append(named)
        if lower in _EN_FUNCTION or lower in _EN_PRONOUNS or lower in _EN_DEMONSTRATIVES:
            continue
        named = named or (word[0].isupper() and lower != "i")
    return marks


def _demonstrative_that(before: str | None, after: str | None) -> bool:
    """``that`` as a pronoun ("after that", "was that ..."), not a relative or conjunction."""
    if before in ("so", "such"):
        return False
    return before is None or after is None or before in _EN_PREPOSITIONS or before in _EN_BE_DO


def _ends_phrase(after: str | None) -> bool:
    """No noun follows: "the same?" is a reference, "the former guitarist" is not."""
    return after is None or after in _EN_FUNCTION or after in _EN_BE_DO


def _english_refers_back(original: str) -> bool:
    cased = _EN_WORD.findall(original.replace("\u2019", "'"))
    if not cased:
        return False
    words = [w.casefold() for w in cased]
    text = " ".join(words)
    if original.casefold().lstrip().startswith(_EN_OPENERS):
        return True
    if len(words) <= _EN_SHORT and all(w in _EN_FUNCTION for w in words):
        return True
    impersonal = bool(_EN_IMPERSONAL.search(text))
    antecedent = _english_antecedents(cased)
    for i, word in enumerate(words):
        before = words[i - 1] if i else None
        after = words[i + 1] if i + 1 < len(words) else None
        if word in _EN_PRONOUNS and not (word in ("it", "its") and impersonal):
            stranded = after is None and before in _EN_PREPOSITIONS  # "... in favour of it?"
            if stranded or not antecedent[i]:
                return True
        if word in _EN_DEMONSTRATIVES:
            return True
        if word == "that" and _demonstrative_that(before, after):
            return True
        if word == "there" and before not in _EN_EXISTENTIAL and after not in _EN_EXISTENTIAL:
            return True
        if before == "the" and word in ("same", "former", "latter") and _ends_phrase(after):
            return True
    return False


# -- Arabic -------------------------------------------------------------------------------

_AR_DEMONSTRATIVES = _words("هذا هذه هذان هذين هاتان هاتين هؤلاء ذلك تلك ذاك اولئك")
_AR_CONNECTIVES = _words("لذلك كذلك ولذلك وكذلك فلذلك")
_AR_PRONOUNS = _words("هو هي هم هما هن")
_AR_PRONOUN_CUES = _words("هل لماذا وهل فهل")
_AR_POSSESSION = _words("له لها لهم لديه لديها لديهم عنده عندها عندهم")
_AR_SUFFIXES = ("هما", "هم", "هن", "ها", "ه")
_AR_PREPOSITION_STEMS = tuple(
    sorted(
        _words(
            "في من عن ل ب على إلى مع عند لدى حول بعد قبل مثل ضد بين دون خلال تحت فوق أمام وراء"
            " عبر نحو داخل خارج"
        )
    )
)
_AR_PREPOSITIONS_WITH_SUFFIX = frozenset(
    stem + suffix for stem in _AR_PREPOSITION_STEMS for suffix in _AR_SUFFIXES
)
_AR_NOUN_SUFFIXES = ("هما", "هم", "ها")
# Before a final root "ه" (not a suffix): "اتجاه مياه", "تنبيه شبيه", "تشابه", "مكروه".
_AR_ROOT_HA = frozenset("ايوب")
_AR_HA_LENGTH = 4
_AR_QUANTIFIERS = _words("كل جميع بعض نفس ذات معظم اغلب عين كلا اي ايت")
_AR_NATURAL_ENDINGS = tuple(sorted(_words("ساهم سهم فهم درهم دراهم وهم تهم بهم مهما منتهم")))
_AR_RELATIVES = _words("الذي التي الذين اللذان اللتان اللاتي اللواتي اللائي اللذين اللتين")
_AR_INTERROGATIVES = _words("ما من ماذا")
_AR_OPENERS = _words("وماذا ومتى واين وكيف ولماذا ومن وما وكم وهل وأي")
_AR_FUNCTION = _words(
    "ما ماذا من متى اين كيف لماذا كم هل اي أي اذا و او في عن الى على مع ثم ايضا"
    " كان كانت يكون هو هي هم ذلك هذا هذه عام سنة اسم عدد سبب نوع متي فقط بالضبط"
    " وماذا ومتى واين وكيف ولماذا ومن وما وكم وهل ماهو ماهي داخل خارج حول بين عند بعد قبل"
    " خلال منذ حتى الذي التي الذين"
)
_AR_SHORT = 3
_AR_PRO_DROP = _words("متى كيف لماذا")
_AR_ANTECEDENTS = 3
_PROCLITICS = ("و", "ف")
_JOINED = ("ب", "ل", "ك")


def _strip_proclitics(word: str) -> list[str]:
    """``word`` and what remains without ``و``/``ف`` and then ``ب``/``ل``/``ك`` glued on."""
    forms = [word]
    if len(word) > 3 and word[0] in _PROCLITICS:
        word = word[1:]
        forms.append(word)
    if len(word) > 3 and word[0] in _JOINED:
        forms.append(word[1:])
    return forms


def _suffixed_word(word: str) -> bool:
    """A noun or verb ending in a pronoun suffix ``ها هم هما`` (see the module notes)."""
    core = word[1:] if len(word) > 5 and word[0] in _PROCLITICS else word
    if core.startswith(("ال", "لل")) or len(core) < _AR_HA_LENGTH:
        return False
    if core.endswith("ته"):
        return True  # a noun in "ة" with "ه": "علاقته", "وفاته"
    if core.endswith("ه") and len(core) >= _AR_HA_LENGTH and core[-2] not in _AR_ROOT_HA:
        return True  # "أرضه", "عمره"; not "اتجاه", "تنبيه", "تشابه", "مكروه"
    if len(core) < 5 or not core.endswith(_AR_NOUN_SUFFIXES):
        return False
    if core.endswith(_AR_NATURAL_ENDINGS) or core[:-1].endswith(_AR_NATURAL_ENDINGS):
        return False  # also with the accusative alif: "درهما"
    stem = core[:-3] if core.endswith("هما") else core[:-2]
    return stem not in _AR_QUANTIFIERS


def _arabic_refers_back(text: str) -> bool:
    words = _AR_WORD.findall(fold_arabic(text))
    if not words:
        return False
    first = words[0]
    if first in _AR_OPENERS or (first == "ماذا" and len(words) > 1 and words[1] == "عن"):
        return True
    if len(words) <= _AR_SHORT and all(w in _AR_FUNCTION for w in words):
        return True
    if len(words) == 2 and first in _AR_PRO_DROP and not words[1].startswith("ال"):
        return True  # "متى تأسست؟": a verb whose subject is the previous turn's
    resumptive, content_before = False, 0  # resumptive: a relative waits for its pronoun
    for i, word in enumerate(words):
        before = words[i - 1] if i else None
        after = words[i + 1] if i + 1 < len(words) else None
        forms = _strip_proclitics(word)
        if word not in _AR_CONNECTIVES and any(f in _AR_DEMONSTRATIVES for f in forms):
            return True
        pronoun = next((f for f in forms if f in _AR_PRONOUNS), None)
        if pronoun is not None and (
            before is None
            or before in _AR_PRONOUN_CUES
            or pronoun != word
            or (after is None and not before.startswith("ال"))
        ):
            return True
        suffixed = any(f in _AR_PREPOSITIONS_WITH_SUFFIX for f in forms) or _suffixed_word(word)
        if word in _AR_POSSESSION and before is not None:
            # "من لديه ..." (who has), "جامعة لها ..." (a university that has): not a reference.
            suffixed = before not in _AR_INTERROGATIVES and before in _AR_FUNCTION
        # The first suffix after a relative pronoun resumes its noun ("الدولة التي ولد
        # فيها"); after three content words a suffix most likely points to one of them
        # ("بدأ ثامر حسني مسيرته"); after two it still counts ("كم بلد شارك فيها؟").
        if suffixed and resumptive:
            resumptive = False
        elif suffixed and content_before < _AR_ANTECEDENTS:
            return True
        resumptive = resumptive or word in _AR_RELATIVES
        content_before += len(word) >= 3 and word not in _AR_FUNCTION and not suffixed
    return False


def refers_back(query: str) -> bool:
    """True when ``query`` reads as a follow-up: it points back with a pronoun, a
    demonstrative or an ellipsis (Arabic or English; see the module notes).

    A question that names its own subject ("Who founded Velmora?", "ما هي عاصمة
    مصر؟") is False.  Not a string: False (the pipeline reports its own error).
    """
    if not isinstance(query, str):
        return False
    return _english_refers_back(query) or _arabic_refers_back(query.strip())
