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
    the end after a preposition or as an object ("... in favour of it?", "when
    did Priestley name it?"); an impersonal ``it`` ("it is possible to", "is it
    true", "how long does it take to", "what is it called") never counts;
  * ``this these those`` anywhere; ``that`` only where it cannot be a relative
    or a conjunction (first or last word, or after a preposition or a form of
    *be*/*do*: "after that", "when was that built"); ``there`` unless
    existential ("are there ...", "there were ..."); ``the same``, ``the
    former``, ``the latter`` not followed by a noun;
  * ellipsis: a question opening with ``and``, ``but``, ``also``, ``what
    about``, ``how about`` or ``what else``, or a short one (at most four
    words) with no content word ("Why?", "How many?", "Which year?").

Arabic (tashkeel, tatweel and alef forms ignored; the word lists are in
``_followup_words``)
  * a demonstrative (``هذا هذه هذان هاتان هؤلاء ذلك تلك ذاك أولئك``), also
    with ``و ف ب ل ك`` glued on, but not the connectives ``لذلك كذلك``; a
    locative ``هناك`` closing the question ("هل ما زال يعمل هناك؟"), not the
    existential "هل هناك ...";
  * an independent pronoun (``هو هي هم هما هن``) that opens the question,
    follows ``هل`` or ``لماذا``, carries ``و``/``ف``, or closes it ("من هو؟");
    not the copula of "ما هو التعلم الآلي؟" or "الأكسجين هو ...", nor
    "الدكتور هو";
  * a pronoun suffix (``ه ها هم هما هن``) on a preposition (``فيها منه عنهم
    به عليه إليها معه بعدها ...``); ``ها هم هما`` on any other word of at
    least five letters without the article ("عاصمتها", "لغتهم"), except
    quantifiers (``كلها جميعها نفسها أنفسهم ...``) and whole words that end
    so by themselves (``يساهم دراهم متهم``); ``ه`` on a word of at least four
    letters without the article ("عمره", "وفاته", "أبيه", "معناه"), except the
    words whose root ends in ``ه`` after ``ا ي و ب`` (``اتجاه تنبيه مكروه
    تشابه``) and names in ``ويه``/``ييه``.  It does not count:
    - when it is the suffix a relative pronoun waits for, agreeing with it
      (``الذي``/``ه``, ``التي``/``ها``, ``الذين``/``هم`` ...: "الدولة التي ولد
      فيها ابن خلدون", "ما الذي دعا إليه لوثر"); one that does not agree does not
      resume it ("ما الذي يميزها؟"), and one that closes the question right
      after the relative and a verb leaves that verb without a subject: "ما
      الدولة التي ولد فيها؟" (where was *he* born) counts;
    - after three content words (one of them is most likely what it points
      to: "بدأ ثامر حسني مسيرته"; after two it still counts: "كم بلد شارك
      فيها؟"), unless it closes the question on a preposition ("كم مقاطعة في
      الجزء الأوروبي منها؟") or it is ``ها`` and none of those words could be
      what it stands for (nothing feminine or plural by its form: ``ة ات اء
      ا`` or a broken plural's shape, "في أي عام تعرف جوزيف بريستلي عليها؟");
    - after a second question joined by ``و`` ("أين تقع مصر وما أهم مدنها؟");
    - a possessive "لديه"/"لها" right after ``من`` ("من لديه الرقم القياسي؟",
      who has) or after a noun ("جامعة لها أصل"), unless it closes the
      question ("هل يوجد علاج له؟");
  * ellipsis: a question opening with ``و`` + an interrogative or a
    preposition (``وماذا``, ``ومتى``, ``وما``, ``وفي`` ...) or with ``ماذا
    عن``; a short one (at most three words) with no content word or opening
    with ``و`` + the article ("والثاني؟");
  * a verb left without a subject: a question phrase (interrogatives and
    prepositions, with the noun after ``أي``/``كم``) and then a verb by its
    form (a common verb, a present tense in ``ي``; also ``ت``/``ن`` and a past
    in ``ت`` after ``متى كيف لماذا لمن`` or ``أي``/``كم`` + noun, where a name
    could hardly stand: "أين تونس؟" is no follow-up) that closes the question or
    is followed by an adverb ("في أي عام ولد؟", "أين يعيش الآن؟"); a plural
    verb (``وصلوا``, ``يعيشون``) may be followed by anything: a named subject
    after its verb takes the singular ("متى وصلوا إلى الأندلس؟").

Known misses: a verb with its object and no subject ("أين تعلم القراءة؟", "هل
فاز بأي بطولة؟"), a suffix after three content words one of which agrees with
it, a definite description ("when was the company founded?").  Known false
alarms: a name ending in ``ه`` ("أدرنه"), a ``ة`` written ``ه``, a suffix
pointing to a word two words before ("أي الدول تشترك في حدودها مع السودان؟",
"متى وسع لوثر تهجمه؟").
"""

from __future__ import annotations

from . import _followup_words as w
from .index.analysis import fold_arabic

__all__ = ["refers_back"]

_EN_SHORT = 4
_AR_SHORT = 3
_AR_HA_LENGTH = 4
_AR_ANTECEDENTS = 3
_PROCLITICS = ("و", "ف")
_JOINED = ("ب", "ل", "ك")


# -- English ------------------------------------------------------------------------------


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
        if lower in w.EN_FUNCTION or lower in w.EN_PRONOUNS or lower in w.EN_DEMONSTRATIVES:
            continue
        named = named or (word[0].isupper() and lower != "i")
    return marks


def _demonstrative_that(before: str | None, after: str | None) -> bool:
    """``that`` as a pronoun ("after that", "was that ..."), not a relative or conjunction."""
    if before in ("so", "such"):
        return False
    return before is None or after is None or before in w.EN_PREPOSITIONS or before in w.EN_BE_DO


def _ends_phrase(after: str | None) -> bool:
    """No noun follows: "the same?" is a reference, "the former guitarist" is not."""
    return after is None or after in w.EN_FUNCTION or after in w.EN_BE_DO


def _english_refers_back(original: str) -> bool:
    cased = w.EN_WORD.findall(original.replace("\u2019", "'"))
    if not cased:
        return False
    words = [word.casefold() for word in cased]
    text = " ".join(words)
    if original.casefold().lstrip().startswith(w.EN_OPENERS):
        return True
    if len(words) <= _EN_SHORT and all(word in w.EN_FUNCTION for word in words):
        return True
    impersonal = bool(w.EN_IMPERSONAL.search(text))
    antecedent = _english_antecedents(cased)
    for i, word in enumerate(words):
        before = words[i - 1] if i else None
        after = words[i + 1] if i + 1 < len(words) else None
        if word in w.EN_PRONOUNS and not (word in ("it", "its") and impersonal):
            # Stranded at the end, after a preposition or as the object of the last
            # verb, it points out of the question even after a name ("... recognize it?").
            stranded = after is None and (before in w.EN_PREPOSITIONS or word in w.EN_OBJECTS)
            if stranded or not antecedent[i]:
                return True
        if word in w.EN_DEMONSTRATIVES:
            return True
        if word == "that" and _demonstrative_that(before, after):
            return True
        if word == "there" and before not in w.EN_EXISTENTIAL and after not in w.EN_EXISTENTIAL:
            return True
        if before == "the" and word in ("same", "former", "latter") and _ends_phrase(after):
            return True
    return False


# -- Arabic -------------------------------------------------------------------------------


def _strip_proclitics(word: str) -> list[str]:
    """``word`` and what remains without ``و``/``ف`` and then ``ب``/``ل``/``ك`` glued on."""
    forms = [word]
    if len(word) > 3 and word[0] in _PROCLITICS:
        word = word[1:]
        forms.append(word)
    if len(word) > 3 and word[0] in _JOINED:
        forms.append(word[1:])
    return forms


def _bare(word: str) -> str:
    """``word`` without the proclitics and the article: the form the word lists hold."""
    bare = _strip_proclitics(word)[-1]
    return bare[2:] if bare.startswith("ال") and len(bare) > 4 else bare


def _suffixed_word(word: str) -> bool:
    """A noun or verb ending in a pronoun suffix ``ه ها هم هما`` (see the module notes)."""
    core = word[1:] if len(word) > 5 and word[0] in _PROCLITICS else word
    if core.startswith(("ال", "لل")) or len(core) < _AR_HA_LENGTH:
        return False
    if core.endswith("ته"):
        return True  # a noun in "ة" with "ه": "علاقته", "وفاته"
    if core.endswith("ه"):  # "أرضه", "عمره", "أبيه"; not "اتجاه", "تنبيه", "مكروه"
        bare = _bare(word)
        return core[-2] not in w.AR_ROOT_HA or not (
            bare in w.AR_ROOT_HA_WORDS or bare.endswith(w.AR_NAME_ENDINGS)
        )
    if len(core) < 5 or not core.endswith(w.AR_NOUN_SUFFIXES):
        return False
    bare = _bare(word)
    if bare in w.AR_NATURAL_WORDS or bare[:-1] in w.AR_NATURAL_WORDS:
        return False  # "يساهم", "دراهم"; also with the accusative alif: "درهما"
    stem = core[:-3] if core.endswith("هما") else core[:-2]
    return stem not in w.AR_QUANTIFIERS


def _feminine_or_plural(word: str) -> bool:
    """Could ``word`` be what a "ها" stands for?  A feminine ending (``ة اء ا``, ``ه`` for a
    ``ة``), a plural in ``ات`` or the shape of a broken plural (``مراحل مشاريع حدود``)."""
    bare = _bare(word)
    if bare.endswith(w.AR_FEMININE_ENDINGS):
        return True
    return (len(bare) in (5, 6) and bare[2] == "ا") or (len(bare) == 4 and bare[2] == "و")


def _suffix(word: str) -> str:
    """The pronoun suffix ``word`` ends with (longest first)."""
    return next((s for s in w.AR_SUFFIXES if word.endswith(s)), "")


def _verb_like(word: str, lenient: bool) -> bool:
    """A verb by its form: a common one, a present tense in ``ي`` (``ت``/``ن``, or a past in
    ``ت``, when ``lenient``: where a name cannot stand), or a plural in ``وا``/``ون``."""
    if word.startswith("ال") or len(word) < 3:
        return False
    if word in w.AR_COMMON_VERBS or word[0] == "ي" or word.endswith("وا"):
        return True
    return lenient and (word[0] in "تن" or (word.endswith("ت") and len(word) > 3))


def _subject_left_to_verb(words: list[str]) -> bool:
    """A question phrase and then a verb with no subject of its own: "في أي عام ولد؟".

    Singular verbs end the question (or only an adverb follows: "أين يعيش الآن؟");
    a plural verb may be followed by anything ("متى وصلوا إلى الأندلس؟"), since a
    named subject takes a singular verb when it follows it.
    """
    i, lenient, asked = 0, False, False
    while i < len(words) and words[i] in w.AR_PHRASE_WORDS:
        asked = asked or words[i] in w.AR_QUESTION_WORDS
        lenient = lenient or words[i] in w.AR_LENIENT
        i += 1
        if words[i - 1] in w.AR_NOUN_SLOT and i < len(words) - 1:
            i, lenient = i + 1, True  # the noun asked about: "أي عام", "كم سنة"
    if not asked or i >= len(words) or not _verb_like(words[i], lenient):
        return False
    verb, rest = words[i], words[i + 1 :]
    plural = (verb.endswith("وا") and verb[0] not in "يتن") or (
        verb.endswith("ون") and verb[0] == "ي" and len(verb) > 5
    )
    return plural or all(word in w.AR_TRAILING for word in rest)


def _arabic_ellipsis(words: list[str]) -> bool:
    """The question leaves out what the conversation says: "ومتى؟", "ماذا عن القاهرة؟"."""
    first = words[0]
    if first in w.AR_OPENERS or (first == "ماذا" and len(words) > 1 and words[1] == "عن"):
        return True
    short = len(words) <= _AR_SHORT
    if short and all(word in w.AR_FUNCTION for word in words):
        return True
    if short and first.startswith("وال") and not first.startswith(w.AR_WAL_WORDS):
        return True  # "والثاني؟"
    return _subject_left_to_verb(words)


def _arabic_refers_back(text: str) -> bool:
    words = w.AR_WORD.findall(fold_arabic(text))
    if not words:
        return False
    if _arabic_ellipsis(words):
        return True
    # resumes: the suffixes the last relative pronoun (at ``relative``) waits for;
    # feminine: a possible antecedent of "ها" was seen.
    resumes: tuple[str, ...] = ()
    relative, content_before, feminine, conjoined = 0, 0, False, False
    for i, word in enumerate(words):
        before = words[i - 1] if i else None
        after = words[i + 1] if i + 1 < len(words) else None
        forms = _strip_proclitics(word)
        if _arabic_pointer(forms, before, after):
            return True
        plain = forms[1] if len(forms) > 1 and word[0] in _PROCLITICS else word
        preposition = any(f in w.AR_PREPOSITIONS_WITH_SUFFIX for f in forms) and (
            plain[: -len(_suffix(plain)) or None] not in w.AR_QUANTIFIERS  # "كلها": no "لها"
        )
        suffixed = preposition or _suffixed_word(word)
        if word in w.AR_POSSESSION and before is not None and after is not None:
            # "من لديه ..." (who has), "جامعة لها ..." (a university that has): not a
            # reference; closing the question it is one ("هل يوجد علاج له؟").
            suffixed = before not in w.AR_INTERROGATIVES and before in w.AR_FUNCTION
        # A second question joined by "و" points to the first one's subject: "أين تقع
        # مصر وما أهم مدنها؟".
        conjoined = conjoined or bool(i and word in w.AR_OPENERS and content_before)
        suffixed = suffixed and not conjoined
        # The suffix a relative pronoun waits for resumes its noun ("الدولة التي ولد فيها
        # ابن خلدون"), but closing the question right after the relative and a verb it
        # leaves that verb without a subject: "ما الدولة التي ولد فيها؟" (where was *he*
        # born).  A suffix that does not agree with the relative does not resume it ("ما
        # الذي يميزها؟").  After three content words a suffix most likely points to one of
        # them ("بدأ ثامر حسني مسيرته"), unless it closes the question on a preposition
        # ("كم مقاطعة في الجزء الأوروبي منها؟") or it is "ها" and none of them is
        # feminine or plural.
        if suffixed and _suffix(word) in resumes:
            if after is None and i - relative <= 2:
                return True
            resumes = ()
        elif suffixed and (
            content_before < _AR_ANTECEDENTS
            or (preposition and after is None)
            or (_suffix(word) == "ها" and not feminine)
        ):
            return True
        if (found := next((f for f in forms if f in w.AR_RELATIVES), None)) is not None:
            resumes, relative = w.AR_RELATIVES[found], i  # also "والتي"
        content = len(word) >= 3 and word not in w.AR_FUNCTION and not suffixed
        content_before += content
        feminine = feminine or (content and _feminine_or_plural(word))
    return False


def _arabic_pointer(forms: list[str], before: str | None, after: str | None) -> bool:
    """A demonstrative, a locative "there" or an independent pronoun that points back."""
    word = forms[0]
    if word not in w.AR_CONNECTIVES and any(f in w.AR_DEMONSTRATIVES for f in forms):
        return True
    if word in w.AR_THERE and after is None and before not in w.AR_FUNCTION:
        return True  # "هل ما زال يعمل هناك؟", not the existential "هل هناك ..."
    pronoun = next((f for f in forms if f in w.AR_PRONOUNS), None)
    return pronoun is not None and (
        before is None
        or before in w.AR_PRONOUN_CUES
        or pronoun != word
        or (after is None and not before.startswith("ال"))
    )


def refers_back(query: str) -> bool:
    """True when ``query`` reads as a follow-up: it points back with a pronoun, a
    demonstrative or an ellipsis (Arabic or English; see the module notes).

    A question that names its own subject ("Who founded Velmora?", "ما هي عاصمة
    مصر؟") is False.  Not a string: False (the pipeline reports its own error).
    """
    if not isinstance(query, str):
        return False
    return _english_refers_back(query) or _arabic_refers_back(query.strip())
