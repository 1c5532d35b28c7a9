"""Five web pages of the kinds people index, each with its main text and its chrome known.

Each :class:`Page` says which sentences are the page's content (``main``), which
strings are navigation, banners, sidebars and footers (``chrome``), and its
section headings, so an extractor is scored on what it keeps and what it drops.
Written for ``bench_readers.py``; the markup follows common site templates:
semantic HTML5, a ``<div>``-only blog, an Arabic news article, an FAQ page with
a cookie banner and breadcrumbs, and a wiki-like article with an infobox.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAGES", "Page"]


@dataclass(frozen=True)
class Page:
    """One page, with the text an extractor should keep and the text it should drop."""

    name: str
    html: str
    main: tuple[str, ...]
    chrome: tuple[str, ...]
    headings: tuple[str, ...]


def _paragraphs(sentences: tuple[str, ...]) -> str:
    return "".join(f"<p>{s}</p>\n" for s in sentences)


_DOCS_MAIN = (
    "The engine reads a query and returns a context that fits the budget.",
    "Install the package with pip and the documents extra to read PDF files.",
    "Each chunk keeps the page and the section it came from.",
    "Citations name the file, the page and the section of every chunk they cite.",
    "Run the index command on a folder to read every supported file in it.",
)
DOCS = Page(
    "documentation (HTML5 nav/main/aside/footer)",
    f"""<!doctype html><html lang="en"><head><title>Getting started · Zerda docs</title>
<link rel="stylesheet" href="/s.css"><script>window.dataLayer=[];</script></head><body>
<header class="site"><a class="brand" href="/">Zerda docs</a>
<nav aria-label="main"><ul><li><a href="/guide">User guide</a></li><li><a href="/api">API
reference</a></li><li><a href="/changelog">Changelog and release history</a></li></ul></nav>
<form role="search"><input placeholder="Search the documentation"></form></header>
<div class="layout"><aside class="toc"><h2>On this page</h2><ul><li><a href="#i">Installation
steps overview</a></li><li><a href="#u">Usage walkthrough</a></li></ul></aside>
<main><h1>Getting started</h1>{_paragraphs(_DOCS_MAIN[:1])}
<h2 id="i">Installation</h2>{_paragraphs(_DOCS_MAIN[1:3])}
<pre><code>pip install zerda-async[documents]</code></pre>
<h2 id="u">Usage</h2>{_paragraphs(_DOCS_MAIN[3:])}
<ul><li>Folders are read recursively.</li><li>Hidden files are skipped.</li></ul></main></div>
<footer><p>Copyright 2026 the Zerda authors. Licensed under Apache 2.0.</p>
<a href="/privacy">Privacy statement and cookie settings</a></footer></body></html>""",
    (*_DOCS_MAIN, "Folders are read recursively.", "Hidden files are skipped."),
    (
        "User guide",
        "Changelog and release history",
        "Search the documentation",
        "Installation steps overview",
        "Copyright 2026 the Zerda authors",
        "Privacy statement and cookie settings",
    ),
    ("Getting started", "Installation", "Usage"),
)

_BLOG_MAIN = (
    "Last spring we moved our search service from a single machine to three replicas.",
    "The first surprise was that the cache hit rate fell by half after the move.",
    "Each replica kept its own cache, so a popular query was computed three times.",
    "We put the cache in Redis and the hit rate came back within a day.",
    "The second surprise was the index size, which doubled when we stored vectors.",
    "Quantising the vectors to eight bits brought it back under the old size.",
)
BLOG = Page(
    "blog (div soup, no semantic tags)",
    f"""<html><head><title>Moving search to replicas | Ops notes</title></head><body>
<div id="top"><div class="logo">Ops notes</div><div class="menu"><ul>
<li><a href="/">Home page</a></li><li><a href="/archive">Archive of older posts</a></li>
<li><a href="/about">About the authors</a></li></ul></div></div>
<div id="wrapper"><div id="content"><div class="post"><h1 class="title">Moving search to
replicas</h1><div class="meta">Posted by Sam on 3 March 2026 in Infrastructure</div>
<h2>The cache</h2>{_paragraphs(_BLOG_MAIN[:4])}<h2>The index</h2>{_paragraphs(_BLOG_MAIN[4:])}
<div class="share">Share this post on social networks</div></div>
<div class="comments"><h3>2 comments</h3><div class="comment"><p>Great write-up, thanks for
sharing the numbers!</p></div><div class="comment"><p>Did you try a shared memcached
instead?</p></div></div></div>
<div id="sidebar"><h3>Recent posts</h3><ul><li><a href="/p1">Why we stopped using cron
jobs</a></li><li><a href="/p2">A week with structured logging</a></li></ul>
<h3>Tags</h3><p><a href="/t/ops">ops</a> <a href="/t/db">databases</a></p></div></div>
<div id="footer"><p>All content copyright Ops notes 2026. Powered by a static site
generator.</p></div></body></html>""",
    _BLOG_MAIN,
    (
        "Archive of older posts",
        "About the authors",
        "Share this post on social networks",
        "Great write-up, thanks for sharing the numbers",
        "Why we stopped using cron jobs",
        "A week with structured logging",
        "All content copyright Ops notes 2026",
    ),
    ("The cache", "The index"),
)

_NEWS_MAIN = (
    "أعلنت وزارة الصحة اليوم عن افتتاح مستشفى جديد في مدينة الرباط بسعة ثلاثمئة سرير.",
    "ويضم المستشفى قسما للطوارئ ومركزا لعلاج أمراض القلب.",
    "وقال الوزير إن المشروع استغرق أربع سنوات من البناء والتجهيز.",
    "ومن المتوقع أن يخدم المستشفى أكثر من مليون نسمة في المنطقة.",
    "وسيبدأ استقبال المرضى في الأسبوع الأول من الشهر المقبل.",
)
NEWS = Page(
    "Arabic news article",
    f"""<!doctype html><html lang="ar" dir="rtl"><head><meta charset="utf-8">
<title>افتتاح مستشفى جديد في الرباط - أخبار اليوم</title></head><body>
<header><nav><ul><li><a href="/">الصفحة الرئيسية</a></li><li><a href="/sport">أخبار
الرياضة والملاعب</a></li><li><a href="/eco">الاقتصاد والأسواق المالية</a></li></ul></nav>
</header><div class="breaking">عاجل: انخفاض أسعار الذهب في الأسواق العالمية</div>
<main><article><h1>افتتاح مستشفى جديد في الرباط</h1><time>2026-03-04</time>
<h2>تفاصيل المشروع</h2>{_paragraphs(_NEWS_MAIN[:3])}<h2>الخدمات المنتظرة</h2>
{_paragraphs(_NEWS_MAIN[3:])}</article>
<section class="related"><h3>اقرأ أيضا</h3><ul><li><a href="/a">ارتفاع درجات الحرارة
في نهاية الأسبوع</a></li><li><a href="/b">فوز المنتخب الوطني في المباراة الودية</a></li></ul>
</section></main><footer><p>جميع الحقوق محفوظة لموقع أخبار اليوم 2026</p></footer>
</body></html>""",
    _NEWS_MAIN,
    (
        "الصفحة الرئيسية",
        "الاقتصاد والأسواق المالية",
        "انخفاض أسعار الذهب في الأسواق العالمية",
        "ارتفاع درجات الحرارة في نهاية الأسبوع",
        "فوز المنتخب الوطني في المباراة الودية",
        "جميع الحقوق محفوظة لموقع أخبار اليوم",
    ),
    ("تفاصيل المشروع", "الخدمات المنتظرة"),
)

_FAQ_MAIN = (
    "You can renew a passport online if your current one expired less than five years ago.",
    "Upload a recent photo and pay the fee with a debit or credit card.",
    "A renewed passport usually arrives by post within three weeks.",
    "If you need to travel sooner, book an appointment for the fast-track service.",
    "Children under sixteen need a new application rather than a renewal.",
)
FAQ = Page(
    "FAQ page (cookie banner, breadcrumbs, skip links)",
    f"""<html><head><title>Passport renewal: questions and answers</title></head><body>
<a class="skip" href="#main">Skip to main content</a>
<div id="cookie-banner" class="cookie-consent"><p>We use cookies to collect information about
how you use this website.</p><button>Accept additional cookies</button></div>
<div class="header"><span class="crown">Official government services portal</span></div>
<div class="breadcrumbs"><ol><li><a href="/">Home</a></li><li><a href="/travel">Travel
abroad and passports</a></li></ol></div>
<div id="main" role="main"><h1>Passport renewal</h1>
<h2>Can I renew online?</h2>{_paragraphs(_FAQ_MAIN[:2])}
<h2>How long does it take?</h2>{_paragraphs(_FAQ_MAIN[2:4])}
<h2>What about children?</h2>{_paragraphs(_FAQ_MAIN[4:])}
<div class="feedback">Is this page useful? Report a problem with this page</div></div>
<div class="footer"><ul><li><a href="/help">Help and support</a></li><li><a
href="/access">Accessibility statement</a></li></ul><p>All content is available under the
Open Government Licence v3.0</p></div></body></html>""",
    _FAQ_MAIN,
    (
        "Skip to main content",
        "We use cookies to collect information",
        "Official government services portal",
        "Travel abroad and passports",
        "Report a problem with this page",
        "Accessibility statement",
        "Open Government Licence",
    ),
    ("Can I renew online?", "How long does it take?", "What about children?"),
)

_WIKI_MAIN = (
    "The fennec fox is a small crepuscular fox native to the deserts of North Africa.",
    "Its most distinctive feature is its unusually large ears, which serve to dissipate heat.",
    "The fennec fox mainly eats insects, small mammals and birds.",
    "It lives in burrows dug in the sand, often in groups of up to ten individuals.",
    "The species is listed as least concern because of its wide range.",
)
WIKI = Page(
    "encyclopedia article (infobox, references, navboxes)",
    f"""<html><head><title>Fennec fox - Encyclopedia</title></head><body>
<div id="mw-head"><div id="p-personal"><a href="/login">Log in to your account</a></div>
<div id="p-views"><a href="/edit">Edit this article</a><a href="/history">View history of
changes</a></div></div>
<div id="mw-panel"><div class="portal"><ul><li><a href="/">Main page of the
encyclopedia</a></li><li><a href="/random">Random article</a></li><li><a href="/donate">Donate
to the foundation</a></li></ul></div></div>
<div id="content"><h1 id="firstHeading">Fennec fox</h1><div id="bodyContent">
<table class="infobox"><tr><th>Kingdom</th><td>Animalia</td></tr><tr><th>Genus</th>
<td>Vulpes</td></tr></table>{_paragraphs(_WIKI_MAIN[:2])}
<h2>Diet</h2>{_paragraphs(_WIKI_MAIN[2:3])}<h2>Behaviour</h2>{_paragraphs(_WIKI_MAIN[3:4])}
<h2>Conservation</h2>{_paragraphs(_WIKI_MAIN[4:])}
<h2>References</h2><ol class="references"><li>Smith, J. Desert canids of the Sahara.
Journal of Zoology, 2001.</li></ol>
<div class="navbox">Canidae genera: Vulpes Canis Lycalopex Otocyon Urocyon</div>
</div></div><div id="footer"><p>This page was last edited on 2 March 2026. Text is
available under the Creative Commons licence.</p></div></body></html>""",
    _WIKI_MAIN,
    (
        "Log in to your account",
        "View history of changes",
        "Main page of the encyclopedia",
        "Donate to the foundation",
        "This page was last edited on 2 March 2026",
    ),
    ("Diet", "Behaviour", "Conservation"),
)

PAGES = (DOCS, BLOG, NEWS, FAQ, WIKI)
