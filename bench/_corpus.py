"""The synthetic workload: a deterministic bilingual corpus and the questions asked of it.

Seeded generators only (no download, no model): two runs on any machine
index and ask the same texts.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import msgspec
import numpy as np


def _words(text: str) -> list[str]:
    return text.split()


_EN_WORDS = _words(
    """
retrieval generation context model language query answer document chunk index vector
embedding keyword search ranking score budget token prompt memory cache latency
throughput network server client request response stream batch pipeline stage worker
thread process kernel scheduler queue buffer socket protocol packet router gateway
database table column row schema transaction replica shard partition cluster node
storage disk volume snapshot backup archive compression encryption signature certificate
river mountain desert valley forest ocean island climate weather rainfall drought harvest
wheat barley olive date palm irrigation canal delta flood season village city market
trade caravan port ship merchant spice silk cotton coffee tea bread recipe kitchen oven
history empire dynasty kingdom caliph sultan scholar library manuscript poetry grammar
astronomy mathematics algebra geometry medicine hospital physician anatomy pharmacy
philosophy logic ethics justice law court judge witness contract property inheritance
education school teacher student lesson exam university research laboratory experiment
physics chemistry biology cell protein gene enzyme molecule atom energy light sound
electricity magnet circuit battery solar wind turbine engine fuel vehicle train bridge
architecture mosque minaret dome arch courtyard garden fountain tile mosaic calligraphy
music rhythm melody instrument oud drum song festival wedding family tradition custom
economy price inflation currency bank loan interest tax budget deficit growth export
import industry factory labour wage employment policy government election parliament
minister ministry council agency regulation standard audit report survey statistics
average median variance distribution sample estimate error bias fairness evaluation
benchmark metric precision recall accuracy baseline experiment dataset annotation label
training inference gradient optimizer learning overfitting regularization dropout layer
attention transformer encoder decoder tokenizer vocabulary sentence paragraph summary
translation dialogue assistant user session history turn feedback rating preference
security threat attack vulnerability patch firewall password authentication permission
software library package module function class method interface object variable loop
compiler interpreter runtime garbage allocation pointer array list dictionary graph tree
algorithm complexity sorting hashing recursion iteration concurrency parallelism lock
"""
)

_AR_WORDS = _words(
    """
التعلم الآلي النموذج اللغة السؤال الجواب الوثيقة الفقرة الفهرس المتجه البحث الترتيب
الذاكرة الخادم الطلب الاستجابة الشبكة البيانات الجدول العمود المعالجة السرعة الكفاءة
النهر الجبل الصحراء الوادي الغابة البحر الجزيرة المناخ المطر الجفاف الحصاد القمح
الزيتون النخيل التمر الري القناة الدلتا الفيضان الموسم القرية المدينة السوق التجارة
القافلة الميناء السفينة التاجر التوابل الحرير القطن القهوة الشاي الخبز المطبخ الفرن
التاريخ الإمبراطورية الدولة المملكة الخليفة السلطان العالم المكتبة المخطوطة الشعر النحو
الفلك الرياضيات الجبر الهندسة الطب المستشفى الطبيب التشريح الصيدلة الفلسفة المنطق
الأخلاق العدالة القانون المحكمة القاضي الشاهد العقد الملكية الميراث التعليم المدرسة
المعلم الطالب الدرس الامتحان الجامعة البحث المختبر التجربة الفيزياء الكيمياء الأحياء
الخلية البروتين الجين الطاقة الضوء الصوت الكهرباء المغناطيس البطارية الشمس الرياح
المحرك الوقود القطار الجسر العمارة المسجد المئذنة القبة القوس الفناء الحديقة النافورة
الخط الموسيقى الإيقاع اللحن العود الطبل الأغنية المهرجان العرس العائلة التقاليد
الاقتصاد السعر التضخم العملة المصرف القرض الفائدة الضريبة الميزانية النمو التصدير
الاستيراد الصناعة المصنع العمل الأجر السياسة الحكومة الانتخابات البرلمان الوزير
الإحصاء المتوسط التوزيع العينة التقدير الخطأ التحيز التقييم الدقة الاستدعاء التدريب
الاستدلال الطبقة الانتباه المحول المشفر الجملة الملخص الترجمة الحوار المساعد المستخدم
الجلسة التاريخ التغذية الأمن الهجوم الثغرة كلمة المرور الصلاحية البرمجيات المكتبة الدالة
"""
)

_EN_GLUE = _words("the of and to in is for on with as by that from at this are it an or be")
_AR_GLUE = _words("في من على إلى عن مع هذا هذه التي الذي أن كان قد ثم أو بين")

_EN_SYLLABLES = _words("ka lo ri ven ta mor sel dra qui bel nor fen tas rul vim pa zo har lin cor")
_AR_LETTERS = list("ابتثجحخدذرزسشصضطظعغفقكلمنهوي")


def _synthetic_en(rng: random.Random, count: int) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choice(_EN_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(words)


def _synthetic_ar(rng: random.Random, count: int) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < count:
        words["ال" + "".join(rng.choice(_AR_LETTERS) for _ in range(rng.randint(3, 5)))] = None
    return list(words)


class _Vocabulary:
    """Content words of one language, ranked, with Zipf-like draw probabilities."""

    def __init__(self, words: list[str], glue: list[str]) -> None:
        self.words = np.array(words, dtype=object)
        ranks = np.arange(1, len(words) + 1, dtype=np.float64)
        weights = 1.0 / (ranks + 2.7) ** 1.05
        self.p = weights / weights.sum()
        self.cdf = np.cumsum(self.p)
        self.glue = np.array(glue, dtype=object)


def _vocabularies(seed: int) -> tuple[_Vocabulary, _Vocabulary]:
    rng = random.Random(seed)
    en_head = list(dict.fromkeys(_EN_WORDS))
    ar_head = list(dict.fromkeys(_AR_WORDS))
    # Mix the topics in the frequency head (the lists above are grouped by topic).
    rng.shuffle(en_head)
    rng.shuffle(ar_head)
    en_words = en_head + _synthetic_en(rng, 3000)
    ar_words = ar_head + _synthetic_ar(rng, 1500)
    return _Vocabulary(en_words, _EN_GLUE), _Vocabulary(ar_words, _AR_GLUE)


class BenchChunk(msgspec.Struct):
    """One synthetic chunk (duck-typed like any chunk: ``doc_id``, ``text``, ``metadata``)."""

    doc_id: str
    text: str
    metadata: dict[str, Any]


def make_corpus(
    n: int, *, seed: int = 7, arabic_share: float = 0.3, sources: int = 24
) -> list[BenchChunk]:
    """``n`` deterministic chunks of 40–80 words, English or Arabic, from ``sources`` sources.

    Words are drawn from a Zipf-like distribution over ~3,400 (English) and
    ~1,700 (Arabic) content words, 30 % of them replaced by function words, so
    BM25 sees realistic posting-list lengths; sentences have 8–14 words.  The
    same ``(n, seed)`` always gives the same corpus (take prefixes of one large
    corpus to get nested sizes).
    """
    en, ar = _vocabularies(seed)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(40, 81, size=n)
    is_ar = rng.random(n) < arabic_share
    src = rng.integers(0, sources, size=n)
    total = int(lengths.sum())
    token_ar = np.repeat(is_ar, lengths)
    u = rng.random(total)
    content = np.where(
        token_ar,
        ar.words[np.minimum(np.searchsorted(ar.cdf, u), ar.words.shape[0] - 1)],
        en.words[np.minimum(np.searchsorted(en.cdf, u), en.words.shape[0] - 1)],
    )
    g = rng.integers(0, 1 << 30, size=total)
    glue = np.where(token_ar, ar.glue[g % ar.glue.shape[0]], en.glue[g % en.glue.shape[0]])
    words_all = np.where(rng.random(total) < 0.3, glue, content).tolist()
    sentence_sizes = rng.integers(8, 15, size=total // 8 + 1).tolist()
    chunks: list[BenchChunk] = []
    start = 0
    s_next = 0
    for i in range(n):
        count = int(lengths[i])
        words = words_all[start : start + count]
        start += count
        sentences: list[str] = []
        pos = 0
        while pos < count:
            size = sentence_sizes[s_next]
            s_next += 1
            sentence = words[pos : pos + size]
            if not is_ar[i]:
                sentence[0] = sentence[0].capitalize()
            sentences.append(" ".join(sentence) + ".")
            pos += size
        chunks.append(
            BenchChunk(
                doc_id=f"doc-{i:06d}",
                text=" ".join(sentences),
                metadata={"source": f"source-{int(src[i]):02d}"},
            )
        )
    return chunks


_EN_TEMPLATES = (
    "What is {0} {1}?",
    "How does {0} affect {1} and {2}?",
    "Explain {0} {1} {2} in detail",
    "Compare {0} and {1}",
    "Why is {0} important for {1}?",
    "List the steps of {0} {1}",
)
_AR_TEMPLATES = (
    "ما هو {0} {1}؟",
    "كيف يؤثر {0} على {1} و{2}؟",
    "اشرح {0} {1} {2}",
    "قارن بين {0} و{1}",
    "لماذا {0} مهم في {1}؟",
)


def make_queries(
    n: int, *, seed: int = 11, arabic_share: float = 0.3, exclude: Iterable[str] = ()
) -> list[str]:
    """``n`` distinct, deterministic questions (English and Arabic) over the corpus vocabulary.

    70 % of query words are drawn uniformly from frequency ranks 20–400 of
    the corpus vocabulary (mid-frequency terms), 30 % from the corpus's own
    Zipf-like distribution (so some queries carry very common terms).
    """
    en, ar = _vocabularies(7)
    rng = random.Random(seed)
    seen = set(exclude)
    queries: list[str] = []
    while len(queries) < n:
        arabic = rng.random() < arabic_share
        vocab, templates = (ar, _AR_TEMPLATES) if arabic else (en, _EN_TEMPLATES)
        words = [
            str(vocab.words[rng.randrange(20, 400)])
            if rng.random() < 0.7
            else str(vocab.words[min(int(np.searchsorted(vocab.cdf, rng.random())), 399)])
            for _ in range(3)
        ]
        query = rng.choice(templates).format(*words)
        if query not in seen:
            seen.add(query)
            queries.append(query)
    return queries
