"""``refers_back``: which questions point back to the conversation (Arabic and English)."""

from __future__ import annotations

from typing import Any

import pytest

from zerda_async.core.followups import refers_back

REFERS_BACK = [
    # English pronouns, demonstratives, ellipsis.
    "When was it founded?",
    "Who founded it?",
    "What is its capital?",
    "How old was he when he died?",
    "Where did they live?",
    "Who succeeded him?",
    "What artist provided the woodcuts for his Bible?",
    "What percentage of the vote was in favour of it?",
    "When was this built?",
    "Who translated these hymns?",
    "What happened after that?",
    "Is that true?",
    "Who lived there?",
    "Was it the same?",
    "And the second one?",
    "and in 1990?",
    "What about Paris?",
    "How about the espresso?",
    "Why?",
    "How many?",
    "Which year exactly?",
    # Arabic: attached pronouns on nouns, verbs and prepositions.
    "ما هي عاصمتها؟",
    "من أسسها؟",
    "كم عدد سكانها؟",
    "متى ولد مؤسسها؟",
    "ما علاقته بالخلافة؟",
    "كم عمره؟",
    "ما اسم والده؟",
    "كم بلد شارك فيها؟",
    "ماذا حدث فيها؟",
    "ماذا قال عنهم؟",
    # Arabic independent pronouns and demonstratives.
    "من هو؟",
    "هل هو متزوج؟",
    "متى بني هذا المسجد؟",
    "من صمم هذه اللوحة؟",
    "ماذا حدث بعد ذلك؟",
    "لماذا سميت بهذا الاسم؟",
    "ما سبب تلك الحرب؟",
    # Arabic ellipsis.
    "ومتى؟",
    "وماذا عن الخبز؟",
    "ماذا عن القاهرة؟",
    "لماذا؟",
    "متى تأسست؟",
    "وكم عددهم؟",
]

STANDS_ALONE = [
    "Who founded Velmora?",
    "How is saffron bread baked?",
    "What is BM25?",
    "How does hybrid retrieval fuse results?",
    "What is the name of the river that flows through Cairo?",
    "Are there any dams on the Nile?",
    "There were how many teams in the league?",
    "Is it true that the Nile flows north?",
    "How long does it take to roast coffee?",
    "What is it called when a government is overthrown?",
    "It is possible to grow dates in Europe?",
    "What did Luther tell monks and nuns about their vows?",
    "How old was Peyton Manning when he played in Super Bowl 50?",
    "What group is Andy Taylor the former lead guitarist of?",
    "The growers pollinate the flowers so that the fruit sets?",
    "What is the capital of Egypt?",
    "ما هو التعلم الآلي؟",
    "ما هي عاصمة مصر؟",
    "من هو مؤسس شركة فيلمورا؟",
    "كيف يخبز خبز الزعفران؟",
    "كيف هي طريقة تحضير القهوة العربية؟",
    "ما الدولة التي ولد فيها ابن خلدون؟",
    "ما الذي دعا إليه لوثر؟",
    "من لديه الرقم القياسي في الدوري؟",
    "أي جامعة لها أصل في كلية طب؟",
    "هل هناك سدود على النيل؟",
    "لذلك ما هو سبب فيضان النيل؟",
    "ما هو آخر جزء من سلسلة الدكتور هو؟",
    "متى بدأت شيرين عبد الوهاب مشوارها الغنائي؟",
    "هل الأكسجين هو أكثر العناصر وفرة في القشرة الأرضية؟",
    "ما هي مراحل نضج التمر كلها؟",
    "كم درهما يساوي الدينار؟",
    "من يساهم في تمويل المشروع الوطني؟",
    "ما اتجاه جريان نهر النيل؟",
    "ما هو التنبيه الذي أصدرته الحكومة؟",
    "متى بدأ الفنان ثامر حسني مسيرته الفنية؟",
    "أين مصر؟",
]


@pytest.mark.parametrize("query", REFERS_BACK)
def test_follow_ups_refer_back(query: str) -> None:
    assert refers_back(query)


@pytest.mark.parametrize("query", STANDS_ALONE)
def test_questions_that_name_their_subject_do_not(query: str) -> None:
    assert not refers_back(query)


def test_diacritics_tatweel_and_proclitics_are_seen_through() -> None:
    assert refers_back("مَا هِيَ عَاصِمَتُهَا؟")
    assert refers_back("ما هي عاصمـــتها؟")
    assert refers_back("وفيها كم مسجدا؟")
    assert refers_back("And when was IT founded?")


@pytest.mark.parametrize("query", ["", "   ", "؟", "?", None, 42, b"it"])
def test_empty_and_non_text_queries_do_not(query: Any) -> None:
    assert not refers_back(query)
