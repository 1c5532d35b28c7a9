"""The bilingual corpus of the engine, index and reliability tests, with queries.

35 English and Arabic chunks (sources, language and year in their metadata,
a long passage, a near-duplicate, a tiny chunk and a noise line), the
source-quality map the tests index with, and queries touching every stage.
"""

from __future__ import annotations

from typing import Any

from support.chunks import Chunk
from zerda_async import SourceQuality

__all__ = ["CORPUS", "QUALITY", "QUERIES", "sourced"]


def sourced(doc_id: str, text: str, source: str, **metadata: Any) -> Chunk:
    """A chunk whose metadata names its ``source`` (and holds ``metadata``)."""
    return Chunk(doc_id, text, {"source": source, **metadata})


_EN = [
    (
        "ml",
        "Machine learning is a field of artificial intelligence that learns patterns from data.",
    ),
    ("dl", "Deep learning uses neural networks with many layers to learn representations."),
    ("rag", "Retrieval augmented generation adds retrieved documents to the prompt of a model."),
    ("bm25", "BM25 is a keyword ranking function based on term frequency and document length."),
    ("vec", "Vector search compares dense embeddings with cosine similarity to find neighbours."),
    ("rrf", "Reciprocal rank fusion merges ranked lists by summing inverse rank contributions."),
    ("tok", "Tokenization splits text into tokens; subword tokenizers handle rare words well."),
    ("attn", "The transformer model relies on self attention to relate every token to the others."),
    ("long", "Transformers handle long sequences with sparse attention or sliding windows."),
    ("ft", "Fine tuning adapts a pretrained model to a task with a small labelled dataset."),
    ("eval", "Evaluation of retrieval uses recall, precision and mean reciprocal rank metrics."),
    (
        "cache",
        "A context cache stores built contexts so that repeated questions are answered fast.",
    ),
    ("chunk", "Chunking splits documents into passages of a few hundred characters for retrieval."),
    ("guard", "A context guard validates that the built context is long enough and has sources."),
    ("budget", "The context budget bounds how many characters or tokens the context may use."),
    ("hist", "Multi turn conversations enrich a follow up question with previous answered turns."),
    ("async", "Async engines serve many concurrent requests on one event loop without threads."),
    ("py", "Python is a programming language popular for data science and machine learning."),
]
_AR = [
    (
        "ar_ml",
        "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي يركز على بناء أنظمة تتعلم من البيانات.",
    ),
    ("ar_dl", "التعلم العميق هو مجال فرعي من التعلم الآلي يعتمد على الشبكات العصبية الاصطناعية."),
    ("ar_nlp", "معالجة اللغات الطبيعية تمكن الحاسوب من فهم النصوص العربية والإنجليزية وتحليلها."),
    ("ar_rag", "التوليد المعزز بالاسترجاع يضيف وثائق مسترجعة إلى سياق النموذج اللغوي قبل الإجابة."),
    ("ar_vec", "البحث المتجهي يقارن التمثيلات العددية للنصوص باستخدام تشابه جيب التمام."),
    ("ar_data", "جودة البيانات أساسية في التعلم الآلي لأن النموذج يتعلم من الأمثلة التي يراها."),
    ("ar_tr", "نموذج المحول يعتمد على آلية الانتباه الذاتي لربط كل كلمة بباقي الكلمات في الجملة."),
    ("ar_eval", "تقييم أنظمة الاسترجاع يستخدم مقاييس مثل الاستدعاء والدقة ومتوسط الرتبة العكسية."),
]
_SOURCES = ["Textbook", "Blog", "Forum", "Paper", "Wiki"]
_AR_SOURCES = ["كتاب التعلم الآلي", "مدونة تقنية", "موسوعة"]


def _build_corpus() -> list[Chunk]:
    docs: list[Chunk] = []
    for i, (doc_id, text) in enumerate(_EN):
        docs.append(
            sourced(doc_id, text, _SOURCES[i % len(_SOURCES)], lang="en", year=2015 + i % 9)
        )
    for i, (doc_id, text) in enumerate(_AR):
        docs.append(sourced(doc_id, text, _AR_SOURCES[i % len(_AR_SOURCES)], lang="ar", year=2020))
    # Longer passages, a duplicate (hash dedup), a tiny chunk and a noise line (filters).
    docs.append(sourced("ml_long", " ".join(t for _, t in _EN[:6]), "Textbook", lang="en"))
    docs.append(sourced("ar_long", " ".join(t for _, t in _AR[:4]), "موسوعة", lang="ar"))
    docs.append(sourced("ml_dup", _EN[0][1].replace(" is ", "   is "), "Forum", lang="en"))
    docs.append(sourced("tiny", "short", "Forum", lang="en"))
    docs.append(sourced("noise", "----------", "Forum", lang="en"))
    return docs


CORPUS: list[Chunk] = _build_corpus()
"""35 English and Arabic chunks with sources, language and year metadata."""

QUALITY: dict[str, SourceQuality] = {
    "Textbook": SourceQuality.HIGH,
    "Paper": SourceQuality.HIGH,
    "Forum": SourceQuality.LOW,
    "كتاب التعلم الآلي": SourceQuality.HIGH,
    "مدونة تقنية": SourceQuality.MEDIUM,
}
"""The source-quality map the tests index with."""

QUERIES: list[str] = [
    "What is machine learning?",
    "what is machine learning?  ",
    "How does the transformer model handle long sequences?",
    "Compare BM25 keyword ranking with vector search and explain reciprocal rank fusion",
    "Explain retrieval augmented generation and why a context budget matters for prompts",
    "ما هو التعلم الآلي؟",
    "ما هو التعلم الآلي؟ ",
    "اشرح الفرق بين التعلم العميق والتعلم الآلي ومعالجة اللغات الطبيعية",
    "How do I evaluate a retrieval system?",
    "What does a context guard check?",
    "Why cache contexts?",
    "List the steps of chunking documents",
    "كيف يعمل البحث المتجهي؟",
    "What is Python used for?",
    "Define tokenization",
    "How does fine tuning work compared with training from scratch, step by step?",
]
"""English and Arabic queries; two pairs share a cache key (case and whitespace)."""
