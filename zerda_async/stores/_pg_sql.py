"""SQL text of the PostgreSQL index store: the schema steps and the filter compiler."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from ._filters import Condition

__all__ = ["INDEX_SCHEMA", "compile_filters"]

INDEX_SCHEMA: tuple[tuple[str, ...], ...] = (
    # 1: chunks, postings and the one-row corpus record (version and BM25 totals).
    (
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE {p}corpus (id int PRIMARY KEY CHECK (id = 1),"
        " version bigint NOT NULL DEFAULT 0, n_live bigint NOT NULL DEFAULT 0,"
        " total_length bigint NOT NULL DEFAULT 0, next_pos bigint NOT NULL DEFAULT 0,"
        " dim int)",
        "INSERT INTO {p}corpus (id) VALUES (1)",
        "CREATE TABLE {p}chunks (pos bigint PRIMARY KEY, doc_id text NOT NULL,"
        " text text NOT NULL, metadata jsonb NOT NULL, length int NOT NULL,"
        " unit bytea, embedding vector)",
        "CREATE INDEX {p}chunks_doc_id ON {p}chunks (doc_id)",
        "CREATE TABLE {p}postings (term text NOT NULL, pos bigint NOT NULL,"
        " tf int NOT NULL, PRIMARY KEY (term, pos))",
        "CREATE INDEX {p}postings_pos ON {p}postings (pos)",
    ),
    # 2: the text analyser the postings were tokenised with (set by the first write).
    ("ALTER TABLE {p}corpus ADD COLUMN analyzer text",),
    # 3: settings the writers record for the readers (the embedder that built the vectors).
    ("CREATE TABLE {p}settings (key text PRIMARY KEY, value jsonb NOT NULL)",),
)
"""Migration steps; step ``n`` brings the schema from version ``n - 1`` to ``n``."""

_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def compile_filters(conditions: tuple[Condition, ...], column: str) -> tuple[str, dict[str, Any]]:
    """A SQL boolean over the jsonb ``column`` and its named parameters (``TRUE`` when empty)."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for i, cond in enumerate(conditions):
        key = f"fk{i}"
        params[key] = cond.key
        if cond.kind == "eq":
            params[f"fv{i}"] = Jsonb(cond.values[0])
            clauses.append(f"({column} -> %({key})s) = %(fv{i})s::jsonb")
        elif cond.kind == "in":
            params[f"fv{i}"] = Jsonb(list(cond.values))
            clauses.append(
                f"EXISTS (SELECT 1 FROM jsonb_array_elements(%(fv{i})s::jsonb) AS w(v)"
                f" WHERE w.v = ({column} -> %({key})s))"
            )
        else:
            tests = []
            for j, (op, bound) in enumerate(cond.bounds):
                params[f"fb{i}_{j}"] = bound
                tests.append(f"({column} ->> %({key})s)::float8 {_OPS[op]} %(fb{i}_{j})s::float8")
            clauses.append(
                f"(CASE WHEN jsonb_typeof({column} -> %({key})s) = 'number'"
                f" THEN {' AND '.join(tests)} ELSE false END)"
            )
    return (" AND ".join(clauses) or "TRUE"), params
