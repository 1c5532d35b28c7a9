"""The word lists of :mod:`.followups` (English and Arabic), kept apart from its rules.

Arabic words are folded as queries are (:func:`.index.analysis.fold_arabic`:
no tashkeel or tatweel, ``أ إ آ`` as ``ا``, ``ى`` as ``ي``), so the lists can be
written the usual way.
"""

from __future__ import annotations

import re

from .index.analysis import fold_arabic

__all__: list[str] = []


def _words(text: str) -> frozenset[str]:
    """The space-separated words of ``text``, Arabic ones folded as queries are."""
    return frozenset(fold_arabic(word) for word in text.split())


EN_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
AR_WORD = re.compile(r"[\u0621-\u064a0-9\u0660-\u0669]+")

# -- English ------------------------------------------------------------------------------

EN_PRONOUNS = _words("he him his she her hers they them their theirs it its")
# An object pronoun ending the question points out of it ("when did Priestley name it?").
EN_OBJECTS = _words("him her them it")
EN_DEMONSTRATIVES = _words("this these those")
EN_BE_DO = _words(
    "is was are were be been being 's am do does did has have had will would can could"
)
EN_PREPOSITIONS = _words(
    "about after before of in on at from by with during since like to into"
    " than under over through without against besides"
)
EN_EXISTENTIAL = _words("is are was were be been 's exist exists existed remain remains")
EN_IMPERSONAL = re.compile(
    r"\b(?:it\s+(?:is|was|'s|has\s+been|will\s+be|would\s+be)\s+\w+\s+(?:to|that|for)\b"
    r"|is\s+it\s+(?:true|possible|necessary|likely|important|known)\b"
    r"|it\s+(?:takes?|took)(?:\s+\w+){0,2}\s+to\b"
    r"|is\s+it\s+called\b|does\s+it\s+mean\b)"
)
EN_OPENERS = ("and ", "but ", "also ", "what about ", "how about ", "what else")
EN_FUNCTION = _words(
    "a an the what which who whom whose when where why how is was are were be been do does"
    " did has have had can could will would should shall may might must of in on at to for"
    " from by with about and or but also so then else again now more most many much long"
    " often old exactly really any some one ones other another year years time date day"
    " place name number reason kind type way people thing things"
)

# -- Arabic -------------------------------------------------------------------------------

AR_DEMONSTRATIVES = _words("هذا هذه هذان هذين هاتان هاتين هؤلاء ذلك تلك ذاك اولئك")
AR_CONNECTIVES = _words("لذلك كذلك ولذلك وكذلك فلذلك")
AR_THERE = _words("هناك هنالك")
AR_PRONOUNS = _words("هو هي هم هما هن")
AR_PRONOUN_CUES = _words("هل لماذا وهل فهل")
AR_POSSESSION = _words("له لها لهم لديه لديها لديهم عنده عندها عندهم")
AR_SUFFIXES = ("هما", "هم", "هن", "ها", "ه")  # longest first
AR_PREPOSITION_STEMS = tuple(
    sorted(
        _words(
            "في من عن ل ب على إلى مع عند لدى حول بعد قبل مثل ضد بين دون خلال تحت فوق أمام وراء"
            " عبر نحو داخل خارج"
        )
    )
)
AR_PREPOSITIONS_WITH_SUFFIX = frozenset(
    stem + suffix for stem in AR_PREPOSITION_STEMS for suffix in AR_SUFFIXES
)
AR_NOUN_SUFFIXES = ("هما", "هم", "ها")
# Before a final root "ه" (not a suffix): "اتجاه مياه", "تنبيه شبيه", "تشابه", "مكروه".
AR_ROOT_HA = frozenset("ايوب")
# After those letters a final "ه" is a suffix ("أبيه", "معناه", "كتابه", "لاعبيه") unless
# the word is one of the roots ending in "ه", a name in "ويه" ("سيبويه") or in "ييه"
# (French "-ier": "لافوازييه"), or "ايه" (the letter A, a verse written with "ه").
AR_ROOT_HA_WORDS = _words(
    "اتجاه توجيه وجيه وجوه مياه انتباه اشتباه تنبيه نبيه منبه شبيه تشابه مشابه اشتبه"
    " فقيه سفيه كريه مكروه اكراه تافه نزيه منتزه رفاه اله الاه متاه انتبه تنبه شاه"
    " باه جاه تجاه اواه اباه ايه"
)
AR_NAME_ENDINGS = ("ويه", "ييه")
AR_QUANTIFIERS = _words("كل جميع بعض نفس انفس ذات معظم اغلب عين كلا اي ايت")
# Words that end in "هم" by themselves, compared whole (without و/ف, ب/ل/ك and ال):
# "لغتهم" ends like "تهم" (charges) and is a pronoun suffix all the same.
AR_NATURAL_WORDS = _words(
    "ساهم يساهم تساهم نساهم مساهم سهم اسهم فهم يفهم تفهم نفهم افهم درهم دراهم وهم اوهم"
    " تهم متهم اتهم يتهم مبهم مهما يلهم ملهم الهم منتهم"
)
# A relative pronoun and the suffix that resumes it ("الدولة التي ولد فيها").
AR_RELATIVES = {
    **dict.fromkeys(_words("الذي اللذي"), ("ه",)),  # with a common misspelling
    **dict.fromkeys(_words("التي اللتي"), ("ها",)),
    **dict.fromkeys(_words("الذين"), ("هم",)),
    **dict.fromkeys(_words("اللذان اللتان اللذين اللتين"), ("هما",)),
    **dict.fromkeys(_words("اللاتي اللواتي اللائي"), ("هن", "ها")),
}
AR_INTERROGATIVES = _words("ما من ماذا")
# "and" + a question word or a preposition opening the question: "ومتى؟", "وفي أي سنة؟".
AR_OPENERS = _words(
    "وماذا ومتى واين وكيف ولماذا ومن وما وكم وهل وأي ولمن وفي وعن وبعد وقبل وإلى وعلى ومع"
)
# "و" + the article opening a short question is an ellipsis ("والثاني؟"), these are words.
AR_WAL_WORDS = ("والد", "والي", "والا", "والت")
AR_FUNCTION = _words(
    "ما ماذا من متى اين كيف لماذا كم هل اي أي اذا و او في عن الى على مع ثم ايضا"
    " كان كانت يكون هو هي هم ذلك هذا هذه عام سنة اسم عدد سبب نوع متي فقط بالضبط"
    " وماذا ومتى واين وكيف ولماذا ومن وما وكم وهل ماهو ماهي داخل خارج حول بين عند بعد قبل"
    " خلال منذ حتى الذي التي الذين عندما حينما بينما كلما لمن"
)
# Words that end like a feminine or plural noun, a possible antecedent of "ها".
AR_FEMININE_ENDINGS = ("ة", "ات", "اء", "ا", "ه")

# A question phrase, then a verb whose subject is left to the conversation: "في أي عام
# توفي؟", "أين يعيشون؟".  The phrase's words: question words and prepositions.
AR_QUESTION_WORDS = _words("ما ماذا من متى اين كيف لماذا كم هل اي لمن ممن مما")
AR_PHRASE_WORDS = AR_QUESTION_WORDS | _words("في عن إلى على مع منذ حتى")
# After these (and after "أي"/"كم" + a noun) a bare word can hardly be a name: a verb
# in "ت" counts ("متى تأسست؟"); after "أين"/"ما"/"من" it could be one ("أين تونس؟").
AR_LENIENT = _words("متى كيف لماذا لمن")
AR_NOUN_SLOT = _words("اي كم")
AR_COMMON_VERBS = _words(
    "ولد ولدت توفي توفيت مات ماتت عاش عاشت تزوج تزوجت بني بنيت اسس اسست تاسس تاسست"
    " انشئ انشئت حكم حكمت درس درست كتب اكتشف اكتشفت اخترع نشا نشات بدا بدات انتهي"
    " انتهت تقع يقع توجد يوجد اشتهر اشتهرت سمي سميت"
)
AR_TRAILING = _words("الان حاليا اليوم ايضا عادة تحديدا بالضبط اولا اخيرا")
