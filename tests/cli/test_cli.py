"""The installed ``zerda`` console script, run in a subprocess."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from .conftest import SCRIPT, run_zerda


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("zerda: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_help_and_version() -> None:
    helped = run_zerda(["--help"])
    assert helped.returncode == 0
    for command in ("index", "query", "serve", "demo"):
        assert command in helped.stdout
    version = run_zerda(["--version"])
    assert version.returncode == 0
    assert version.stdout.startswith("zerda ")


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        ([], 2, "command is required"),
        (["frobnicate"], 2, "invalid choice"),
        (["query"], 2, "required"),
        (["index", "x.txt"], 2, "--out"),
        (["index", "no/such/file.txt", "--out", "idx"], 2, "no such file"),
        (["query", "IDX", "q", "--budget", "-5"], 2, "positive integer"),
        (["query", "IDX", "q", "--max-chunks", "many"], 2, "positive integer"),
        (["query", "IDX", "q", "--template", "fancy"], 2, "invalid choice"),
        (["query", "IDX", "q", "--filter", "novalue"], 2, "KEY=VALUE"),
        (["query", "IDX", "q", "--timeout", "0"], 2, "positive number"),
        (["serve", "IDX", "--port", "70000"], 2, "port"),
        (["index", "IDX/zerda-cli.json", "--out", "IDX/zerda-cli.json"], 2, "not a directory"),
        (["index", "IDX/zerda-cli.json", "--out", "."], 2, "holds no zerda index"),
        (["query", "no-such-index", "q"], 1, "not a directory"),
        (["serve", "no-such-index"], 1, "not a directory"),
        (["query", ".", "q"], 1, "not a zerda index"),
    ],
)
def test_bad_arguments_give_one_line_errors(
    args: list[str], status: int, words: str, built_index: Path
) -> None:
    args = [a.replace("IDX", str(built_index)) for a in args]
    done = run_zerda(args, cwd=built_index.parent)
    assert done.returncode == status
    assert words in _one_line_error(done)


def test_index_reports_skipped_files_by_name(samples: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    done = run_zerda(["index", str(samples), "--out", str(out), "--chunk-size", "300"])
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    err = done.stderr
    assert f"skipped {samples / 'latin1.txt'}: not UTF-8" in err
    assert f"skipped {samples / 'gone.txt'}: " in err
    assert f"skipped {samples / 'empty.txt'}: empty file" in err
    assert f"skipped {samples / 'records.jsonl'}:2: " in err
    assert "ignored 1 file(s)" in err
    assert "embedding" not in err  # the progress line is only drawn on a terminal
    assert done.stdout.startswith("indexed 6 chunks from 4 file(s) into ")
    assert "embedded 6 chunk(s) with multilingual-e5-small" in done.stdout
    assert (out / "zerda-cli.json").is_file()


def test_index_reports_what_it_embedded_and_only_then(tmp_path: Path) -> None:
    """In a pipe no progress line is drawn; the result lines say what was embedded."""
    notes = tmp_path / "notes.txt"
    notes.write_text("Dates ripen in late summer.\n\nCoffee is served with cardamom.\n", "utf-8")
    done = run_zerda(["index", str(notes), "--out", str(tmp_path / "idx"), "--embedder", "hashing"])
    assert done.returncode == 0, done.stderr
    assert "chunks" not in done.stderr
    assert "embedded 1 chunk(s) with hashing (0 vector(s) reused" in done.stdout
    keyword = run_zerda(["index", str(notes), "--out", str(tmp_path / "kw"), "--embedder", "none"])
    assert keyword.returncode == 0, keyword.stderr
    assert "embedded" not in keyword.stdout and "keyword search only" in keyword.stdout


def test_index_fails_when_nothing_is_readable(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\x00bad")
    done = run_zerda(["index", str(bad), "--out", str(tmp_path / "idx")])
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"zerda: skipped {bad}: not UTF-8")
    assert lines[-1] == "zerda: error: no text to index in the given paths"


def test_query_prints_the_context_and_stage_timings(built_index: Path) -> None:
    done = run_zerda(
        ["query", str(built_index), "How is Arabic coffee served?", "--template", "english"]
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("📚 Retrieved Information:")
    assert "[Source: docs/guides/coffee.md]" in out
    assert "cardamom" in out
    timings = next(line for line in out.splitlines() if line.startswith("-- timings: "))
    for stage in ("analysis", "retrieved", "filtered", "ranked", "composed", "guarded", "total"):
        assert f"{stage} " in timings


def test_query_arabic_with_filters_and_budget(built_index: Path) -> None:
    done = run_zerda(
        [
            "query",
            str(built_index),
            "ما هو التعلم الآلي؟",
            "--budget",
            "400",
            "--max-chunks",
            "2",
            "--filter",
            "lang=ar",
        ]
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("📚 المعلومات المسترجعة:")
    assert "الذكاء الاصطناعي" in done.stdout
    assert "budget=400" in done.stdout


def test_query_json_puts_only_the_result_on_stdout(built_index: Path) -> None:
    done = run_zerda(
        ["query", str(built_index), "What is BM25?", "--json", "--template", "minimal"]
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # one JSON document and nothing else
    assert "BM25" in result["context"]
    assert result["template"] == "minimal"
    assert result["chunks_used"][0]["doc_id"] == "bm25"
    assert result["chunks_used"][0]["metadata"]["topic"] == "search"
    assert set(result["timings_ms"]) >= {"analysis", "retrieved", "composed", "guarded"}
    # Timings on stderr (after any guard warning: one chunk in "minimal" has no source marker).
    assert any(line.startswith("timings: analysis ") for line in done.stderr.splitlines())


def test_demo_runs_the_example_queries() -> None:
    done = run_zerda(["demo"])
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "indexed 53 documents (ar, en;" in out
    assert "=== ما هو التعلم الآلي؟  [template arabic]" in out
    assert "=== How does hybrid retrieval fuse results?  [template english]" in out
    assert "=== run_many: 4 queries" in out
    assert "=== run_multi (global budget 1200)" in out
    assert "📚 المعلومات المسترجعة:" in out and "📚 Retrieved Information:" in out
    assert out.count("| total ") >= 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_answers_over_http_and_stops_on_a_signal(
    built_index: Path, stop: signal.Signals, tmp_path: Path
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with (
        log.open("w", encoding="utf-8") as sink,
        subprocess.Popen(
            [str(SCRIPT), "serve", str(built_index), "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        ) as proc,
    ):
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    health = httpx.get(f"{url}/healthz", timeout=2)
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, log.read_text(encoding="utf-8")
                    assert time.monotonic() < deadline, "server did not start"
                    time.sleep(0.1)
            assert health.status_code == 200
            assert health.json()["index"]["chunks"] == 6
            answer = httpx.post(f"{url}/v1/context", json={"query": "Where does the Nile flow?"})
            assert answer.status_code == 200
            assert "Mediterranean" in answer.json()["context"]
            with httpx.stream(
                "POST", f"{url}/v1/context/stream", json={"query": "What is RRF?"}
            ) as response:
                events = [
                    line[len("event: ") :]
                    for line in response.iter_lines()
                    if line.startswith("event: ")
                ]
            assert events[0] == "analysis" and events[-1] == "done"
        finally:
            proc.send_signal(stop)
            try:
                proc.wait(timeout=15)
            finally:
                if proc.poll() is None:
                    proc.kill()
    output = log.read_text(encoding="utf-8")
    assert proc.returncode == 0, output
    assert "Application shutdown complete" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("command", ["query", "serve"])
def test_a_damaged_index_is_a_one_line_error(
    command: str, built_index: Path, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(built_index, damaged)
    (damaged / "CURRENT").unlink()
    args = [command, str(damaged)] + (["What is BM25?"] if command == "query" else [])
    done = run_zerda(args)
    assert done.returncode == 1
    assert "CURRENT: missing" in _one_line_error(done)
