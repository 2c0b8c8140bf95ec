"""The README is true: its HTTP examples run, and say what the service answers.

- Every `curl` command of the README's ```sh blocks is sent, in the README's order, through the
  app on a fresh SQLite database (so `/measurements/1` is the first measurement the README
  stores), and must answer 2xx. A command that reads a shell variable runs once per GitHub
  Actions event (EVENTS); `<name>` stands for the `name` of the latest answer that has one
  (`<workload_key>`); an `@file` body is the fixture FILES names for it. A new curl example
  in the README runs here with no change to this file.
- Each figure the README quotes as an example's answer is in QUOTES: the README's phrase, the
  example (a fragment of its command), where the figure is in the answer and how the phrase
  writes it. The phrase must still be in the README, and the live answer, so written, in it.
- The Reference's endpoint table lists every method and path of the OpenAPI schema, and no
  other; the Reference names every query parameter and header the schema declares.
- The counts the README gives of the validation runs are those of validation/measurements.csv.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BASE_URL = "http://localhost:8000"  # where the README's commands send them

# What GitHub Actions sets on each event: GITHUB_HEAD_REF only on a pull request.
EVENTS = {
    "push": {"GITHUB_HEAD_REF": "", "GITHUB_REF_NAME": "main"},
    "pull_request": {"GITHUB_HEAD_REF": "pr-1", "GITHUB_REF_NAME": "1/merge"},
}
# The files the README's commands send, by the name they give, where the README shows how one
# is made: trace.json, the README's torch.nn.Linear profiled on an H100 (tests/traces/record.py)
FILES = {"trace.json": ROOT / "tests" / "traces" / "gpu_linear.json"}
# ... and files of the repository it sends by their path (tests/traces/gpu_step.json)
FILES |= {"tests/traces/gpu_step.json": ROOT / "tests" / "traces" / "gpu_step.json"}
# curl's options that change how it reports an answer, not what it sends
REPORTING = {"--fail-with-body", "--fail", "-f", "--silent", "-s", "--show-error", "-S"}

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")
_PLACEHOLDER = re.compile(r"<(\w+)>")


# --- the README's curl commands -----------------------------------------------------------


def sh_blocks(markdown: str) -> list[str]:
    """The text of every ```sh fenced block."""
    return [m.group(2) for m in _FENCE.finditer(markdown) if m.group(1) == "sh"]


def curl_commands(block: str) -> Iterator[list[str]]:
    """Each curl command of a shell block as its words: continued lines (a trailing
    backslash, a quote left open) joined, comments dropped."""
    lines = block.replace("\\\n", "").splitlines()
    index = 0
    while index < len(lines):
        command = lines[index]
        index += 1
        if not command.lstrip().startswith("curl "):
            continue
        while True:
            try:
                yield shlex.split(command, comments=True)
                break
            except ValueError:  # a quote still open: the command goes on
                command += "\n" + lines[index]
                index += 1


def expand(word: str, environment: Mapping[str, str]) -> str:
    """`word` with `$NAME`, `${NAME}` and `${NAME:-default}` replaced as the shell does
    (KeyError for a variable the environment does not set)."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1) or match.group(3), match.group(2)
        found = environment[name]
        return expand(default, environment) if default is not None and not found else found

    return _VARIABLE.sub(value, word)


@dataclass(frozen=True)
class Request:
    method: str
    target: str  # path and query
    headers: dict[str, str]
    body: bytes | None


def parse_curl(words: list[str]) -> Request:
    """What a curl command sends (ValueError for an option this test does not know)."""
    method, url, headers, body = None, None, {}, None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-X", "--request"):
            method = next(rest)
        elif word in ("-H", "--header"):
            name, _, value = next(rest).partition(":")
            headers[name.strip().lower()] = value.strip()
        elif word in ("-d", "--data", "--data-binary"):
            data = next(rest)
            body = FILES[data[1:]].read_bytes() if data.startswith("@") else data.encode()
        elif word in REPORTING:
            continue
        elif word.startswith("-"):
            raise ValueError(f"tests/test_readme.py does not know curl's {word}: teach it")
        else:
            url = word
    assert url is not None, f"no URL in {shlex.join(words)}"
    parts = urlsplit(url if "://" in url else f"http://{url}")
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return Request(method or ("POST" if body is not None else "GET"), target, headers, body)


@dataclass(frozen=True)
class Example:
    """One curl command of the README, under one event where it reads a shell variable."""

    words: tuple[str, ...]
    event: str | None

    @property
    def command(self) -> str:
        return shlex.join(self.words)

    def request(self) -> Request:
        environment = EVENTS[self.event] if self.event else {}
        return parse_curl([expand(word, environment) for word in self.words])

    def __str__(self) -> str:
        request = self.request()
        return f"{request.method} {request.target}" + (f" [{self.event}]" if self.event else "")


def examples(markdown: str) -> list[Example]:
    """Every curl command of the README, in order; one per event where it reads a variable."""
    found = []
    for block in sh_blocks(markdown):
        for words in curl_commands(block):
            reads = any(_VARIABLE.search(word) for word in words)
            events = list(EVENTS) if reads else [None]
            found += [Example(tuple(words), event) for event in events]
    return found


EXAMPLES = examples(README)


def _fill(target: str, answers: list[Any]) -> str:
    """`target` with each `<name>` replaced by the latest answer's `name`."""

    def latest(match: re.Match[str]) -> str:
        name = match.group(1)
        for answer in reversed(answers):
            if isinstance(answer, dict) and name in answer:
                return str(answer[name])
        raise AssertionError(f"<{name}>: no answer before it has a {name!r}")

    return _PLACEHOLDER.sub(latest, target)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    database = tmp_path_factory.mktemp("readme") / "roofcheck.db"
    return create_app(Settings(database_url=f"sqlite:///{database}"))


@dataclass(frozen=True)
class Answer:
    status: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


@pytest.fixture(scope="module")
def answers(service: FastAPI) -> dict[Example, Answer]:
    """Each example's answer, the examples sent in the README's order."""
    client = TestClient(service, base_url=BASE_URL)
    answered: dict[Example, Answer] = {}
    bodies: list[Any] = []
    for example in EXAMPLES:
        request = example.request()
        response = client.request(
            request.method,
            _fill(request.target, bodies),
            headers=request.headers,
            content=request.body,
        )
        answered[example] = Answer(response.status_code, response.text)
        if response.headers.get("content-type", "").startswith("application/json"):
            bodies.append(response.json())
    return answered


def test_the_readme_has_curl_examples_of_every_kind() -> None:
    """The parser still finds the README's examples (21 today): GETs, POSTs with a body and
    with a file."""
    requests = [example.request() for example in EXAMPLES]
    assert {"GET", "POST"} <= {r.method for r in requests}
    assert any(r.body == FILES["trace.json"].read_bytes() for r in requests)
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_each_curl_example_answers(example: Example, answers: dict[Example, Answer]) -> None:
    answer = answers[example]
    assert 200 <= answer.status < 300, f"{example.command}\n-> {answer.status} {answer.text}"


# --- the figures the README quotes --------------------------------------------------------


def fits(value: bool) -> str:
    return "fits" if value else "does not fit"


def every_count_fits(values: list[bool]) -> str:
    return "every count fits" if all(values) else "not every count fits"


def own_step(lines: list[str]) -> str:
    """The step's own realistic time, as the explanation of a step fed by a pipeline says it."""
    line = next(line for line in lines if "the step's own" in line)
    return "the step's own " + line.split("the step's own ")[1].split(":")[0]


def per_replica(point: dict[str, Any]) -> str:
    return f"each replica has {point['batch'] // point['dp']} of the {point['batch']} sequences"


@dataclass(frozen=True)
class Figure:
    """Where a figure is in an answer, and how the README writes it."""

    path: str  # keys and list indices, dot-separated; `*`: each item of a list
    form: str | Callable[[Any], str] = "{}"
    unit: float | None = None  # the unit the README gives a number in

    def written(self, answer: Any) -> str:
        value = _at(answer, self.path.split("."))
        if callable(self.form):
            return self.form(value)
        return self.form.format(value if self.unit is None else value / self.unit)


def _at(value: Any, keys: list[str]) -> Any:
    if not keys:
        return value
    key, rest = keys[0], keys[1:]
    if key == "*":
        return [_at(item, rest) for item in value]
    return _at(value[int(key)] if re.fullmatch(r"-?\d+", key) else value[key], rest)


@dataclass(frozen=True)
class Quote:
    """Figures the README gives, in one phrase, as an example's answer."""

    phrase: str  # as the README writes it (line breaks and a comment's `#` aside)
    example: str  # a fragment of exactly one example's command
    figures: tuple[Figure, ...]


F = Figure
GB, MS, US, BILLION = 1e9, 1e-3, 1e-6, 1e9
QUOTES = [
    Quote(
        "square reaches 27.8% of the roofline and loses 361 µs, skinny 20.2%; geometric mean 23.7%",
        '"label": "skinny"',
        (
            F("rows.0.efficiency", "square reaches {:.1%}"),
            F("rows.0.time_lost_s", "loses {:.0f} µs", US),
            F("rows.1.efficiency", "skinny {:.1%}"),
            F("summary.geomean_efficiency", "geometric mean {:.1%}"),
        ),
    ),
    Quote(
        "batch 227, limited by memory",
        "optimal-batch?chip=a100&model=llama-8b",
        (F("optimal_batch", "batch {}"), F("limited_by", "limited by {}")),
    ),
    Quote(
        "(13.7 ms ideal, 26.1 ms realistic), and the memory it needs per chip (54.6 GB: fits)",
        "model=llama-70b&tp=4",
        (
            F("expected_time_s", "{:.1f} ms ideal", MS),
            F("realistic_time_s", "{:.1f} ms realistic", MS),
            F("memory_required_bytes", "({:.1f} GB", GB),
            F("fits", fits),
        ),
    ),
    Quote(
        "Llama 3.1 405B with fp8 weights needs 420 GB: does not fit one H100; fewest chips 8 "
        "(tp=8)",
        "model=llama-405b",
        (
            F("model.name", "{} with"),
            F("workload.weight_dtype", "{} weights"),
            F("required_bytes", "needs {:.0f} GB", GB),
            F("fits", fits),
            F("min_chips", "fewest chips {}"),
            F("min_chips_layout.tp", "(tp={})"),
        ),
    ),
    Quote(
        "attack the synchronisation first: 18 µs of the 100 µs step, over a limit of 0; the "
        "host copy takes at least 15% of the measured time",
        "gpu_step.json",
        (
            F("breakdown.attack_first", "attack the {} first"),
            F("breakdown.parts.4.time_s", "{:.0f} µs of the", US),
            F("breakdown.parts.4.limit_s", "over a limit of {:.0f}"),
            F("breakdown.window_s", "the {:.0f} µs step", US),
            F("copies.share", "at least {:.0%}"),
        ),
    ),
    Quote(
        "fp8 weights first (81.9 GB)",
        "model=llama-70b&options=true",
        (
            F("options.0.weight_dtype", "{} weights first"),
            F("options.0.required_bytes", "({:.1f} GB)", GB),
        ),
    ),
    Quote(
        "10,310 tokens, limited by latency (memory alone allows 58,406)",
        "max-context?chip=a100",
        (
            F("max_context", "{:,} tokens"),
            F("limited_by", "limited by {}"),
            F("memory_context", "allows {:,}"),
        ),
    ),
    Quote(
        # the CLI's line quotes the realistic range of the same decode step
        "published runs on typical 10.58 ms-19.2 ms",
        "measured_ms=5",
        (
            F("realistic_range_s.0", "typical {:.2f} ms", MS),
            F("realistic_range_s.1", "-{:.1f} ms", MS),
        ),
    ),
    Quote(
        "no: ratio 0.59 against the roofline's 8.42 ms, `faster_than_roofline`",
        "measured_ms=5",
        (
            F("ratio", "ratio {:.2f}"),
            F("expected_time_s", "roofline's {:.2f} ms", MS),
            F("verdict", "`{}`"),
        ),
    ),
    Quote(
        "0.6 ms against the ideal 441 µs, `near_roofline` (1.36x)",
        '"kind": "matmul"',
        (
            F("measured_time_s", "{:.1f} ms against", MS),
            F("expected_time_s", "the ideal {:.0f} µs", US),
            F("verdict", "`{}`"),
            F("ratio", "({:.2f}x)"),
        ),
    ),
    Quote(
        "2 ms against the ideal 837 µs: `room_to_improve` (2.39x)",
        '"ops": ["cos", "cos"]',
        (
            F("measured_time_s", "{:.0f} ms against", MS),
            F("expected_time_s", "the ideal {:.0f} µs", US),
            F("verdict", "`{}`"),
            F("ratio", "({:.2f}x)"),
        ),
    ),
    Quote(
        "31.2 ms ideal and 87.1 ms realistic",
        '"direction": "h2d"}}',
        (
            F("expected_time_s", "{:.1f} ms ideal", MS),
            F("realistic_time_s", "{:.1f} ms realistic", MS),
        ),
    ),
    Quote(
        "pinned memory (41.7 ms) beside 30 ms of compute on another stream: the step still "
        "waits 11.7 ms",
        '"overlap_s": 0.03',
        (
            F("realistic_time_s", "({:.1f} ms)", MS),
            F("workload.overlap_s", "beside {:.0f} ms", MS),
            F("explanation.2", lambda line: line[line.index("still") :].split(" for")[0]),
        ),
    ),
    Quote(
        "the pipeline needs 800 ms per step, longer than the step's own 600 ms: `bound: input`, "
        "limited by `decode`",
        '"input_pipeline":',
        (
            F("input_pipeline.time_per_step_s", "{:.0f} ms per step", MS),
            F("explanation", own_step),
            F("bound", "`bound: {}`"),
            F("input_pipeline.limit", "limited by `{}`"),
        ),
    ),
    Quote("mi300x first", "/compare?", (F("rows.0.chip.id", "{} first"),)),
    Quote(
        "Llama 2 13B (13.0B parameters) train on one node of 8 H100s",
        "model=llama2-13b",
        (F("model.name"), F("model.params_total", "({:.1f}B parameters)", BILLION)),
    ),
    Quote(
        "with FSDP (zero=3), 49.1 GB per chip: fits; fewest chips 8 (dp=8); largest batch 28",
        "model=llama2-13b",
        (
            F("workload.zero", "(zero={})"),
            F("required_bytes", "{:.1f} GB per chip", GB),
            F("fits", fits),
            F("min_chips", "fewest chips {}"),
            F("min_chips_layout.dp", "(dp={})"),
            F("max_batch", "largest batch {}"),
        ),
    ),
    Quote(
        "5.37B parameters, so Llama 3.1 8B does not fit one A100",
        "reserve_fraction=0'",
        (
            F("max_trainable_params", "{:.2f}B parameters", BILLION),
            F("model.name", "so {}"),
            F("fits", fits),
        ),
    ),
    Quote(
        "one A100: 16.6 GB, fits",
        "qlora=true",
        (F("required_bytes", "{:.1f} GB", GB), F("fits", fits)),
    ),
    Quote(
        "on 512 H100s at 40% MFU? 2.76 days",
        "train_tokens=1e12",
        (
            F("training.chips", "{} H100s"),
            F("training.realistic_mfu", "{:.0%} MFU"),
            F("training.realistic_time_to_train_days", "{:.2f} days"),
        ),
    ),
    Quote(
        "8 -> 64 GPUs give only 4x? speedup 4.11x at 51% efficiency, every count fits",
        "/scaling?",
        (
            F("points.0.chips", "{} ->"),
            F("points.-1.chips", "-> {} GPUs"),
            F("points.-1.speedup", "only {:.0f}x"),
            F("points.-1.speedup", "speedup {:.2f}x"),
            F("points.-1.efficiency", "at {:.0%} efficiency"),
            F("points.*.fits", every_count_fits),
        ),
    ),
    Quote(
        "at 64 each replica has 4 of the 256 sequences",
        "/scaling?",
        (F("points.-1.chips", "at {} each"), F("points.-1", per_replica)),
    ),
    Quote(
        "Amdahl at 2% serial alone would give 7.02x",
        "/scaling?",
        (F("serial_fraction", "at {:.0%} serial"), F("points.-1.law_speedup", "give {:.2f}x")),
    ),
]


def _flat(text: str) -> str:
    """Text with its line breaks, and the `#` that continues a comment, as single spaces."""
    return " ".join(re.sub(r"\n\s*#", " ", text).split())


def _quoted_example(quote: Quote) -> Example:
    named = [e for e in EXAMPLES if quote.example in e.command]
    assert len({e.command for e in named}) == 1, (
        f"{quote.example!r} names {len(named)} README examples; name one"
    )
    return named[0]


@pytest.mark.parametrize("quote", QUOTES, ids=lambda q: q.phrase)
def test_each_quoted_phrase_is_in_the_readme(quote: Quote) -> None:
    assert _flat(quote.phrase) in _flat(README), f"the README no longer says {quote.phrase!r}"


@pytest.mark.parametrize("quote", QUOTES, ids=lambda q: q.phrase)
def test_each_quoted_figure_is_the_answer(quote: Quote, answers: dict[Example, Answer]) -> None:
    answer = answers[_quoted_example(quote)].json()
    written = [figure.written(answer) for figure in quote.figures]
    wrong = [
        f"{figure.path}: {w!r}"
        for figure, w in zip(quote.figures, written, strict=True)
        if w not in quote.phrase
    ]
    assert not wrong, f"{quote.phrase!r} is not what the service answers: " + ", ".join(wrong)


# --- the endpoints and their parameters ---------------------------------------------------

_METHODS = r"(?:GET|POST|PUT|PATCH|DELETE)"
_ROW = re.compile(rf"^\|\s*({_METHODS}(?:,\s*{_METHODS})*)\s*\|([^|]*)\|", re.MULTILINE)


def reference(markdown: str) -> str:
    """The README's Reference section."""
    return markdown.split("\n## Reference\n", 1)[1].split("\n## ", 1)[0]


def _route(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)  # parameter names aside: {id} is {measurement_id}


def listed_endpoints(markdown: str) -> set[tuple[str, str]]:
    """(method, path) of each row of the Reference's endpoint table."""
    return {
        (method.strip(), _route(path))
        for methods, paths in _ROW.findall(reference(markdown))
        for method in methods.split(",")
        for path in re.findall(r"`([^`]+)`", paths)
    }


def test_the_reference_lists_every_endpoint(service: FastAPI) -> None:
    served = {
        (method.upper(), _route(path))
        for path, operations in service.openapi()["paths"].items()
        for method in operations
    }
    listed = listed_endpoints(README)
    assert not served - listed, f"served but not in the README: {sorted(served - listed)}"
    assert not listed - served, f"in the README but not served: {sorted(listed - served)}"


def test_the_reference_names_every_parameter(service: FastAPI) -> None:
    declared = {
        parameter["name"]
        for operations in service.openapi()["paths"].values()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
        if parameter["in"] in ("query", "header")
    }
    section = reference(README)
    missing = sorted(name for name in declared if f"`{name}`" not in section)
    assert not missing, f"parameters the README's Reference does not name: {missing}"


# --- the validation set -------------------------------------------------------------------


def test_the_readme_counts_the_validation_runs_there_are() -> None:
    with (ROOT / "validation" / "measurements.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    text = _flat(README)
    runs = re.findall(r"(\d+) published(?:, measured)? runs", text)
    assert runs, "the README no longer says how many published runs there are"
    assert set(runs) == {str(len(rows))}
    sources, chips = re.findall(r"from (\d+) sources on (\d+) chips", text)[0]
    assert int(sources) == len({row["source_url"] for row in rows})
    assert int(chips) == len({row["chip"] for row in rows})
