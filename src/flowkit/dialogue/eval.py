"""How well a domain's recogniser understands held-back examples: intent accuracy, a
confusion matrix, per-intent precision and recall, and entity (slot value) F1, per language.

Held-back examples are utterances the domain never trains on (not its ``examples``), each with
the intent it means and the entity values in it, in a file beside the domain
(``NAME.eval.yaml``; the shipped examples have theirs)::

    domain: robot_cell
    today: 2025-03-10             # what "tomorrow" means
    examples:
      - {lang: en, text: "could arm 3 get serviced on friday", intent: book_maintenance,
         entities: {machine: robot_3, date: 2025-03-14}}
      - {lang: ja, text: "佐藤と申します", expects: requester, intent: inform,
         entities: {person_name: 佐藤}}

``intent`` is a task or control intent, a FAQ id or small-talk intent (the best match of a
``QUESTION`` or ``SMALL_TALK``), ``OOS``, or ``inform`` (only slot values, for an example with
``expects``: the slot the assistant just asked for). An ``entities`` key is an entity name, or
``entity:role``. ``evaluate`` runs the offline recogniser, or the LLM one when given an LLM.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from lxml import etree  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import DomainError
from ..foundation._atomic import write_atomically
from ._locate import example_path
from ._models import INFORM, Domain
from ._report import parse_file
from .nlu import LLMRecognizer, OfflineRecognizer, Recognizer, TurnContext, Understanding
from .state import Entity

__all__ = [
    "EvalExample",
    "EvalFile",
    "EvalReport",
    "Scores",
    "eval_junit_xml",
    "evaluate",
    "format_eval",
    "heldout_path",
    "load_eval",
    "understood_label",
    "write_eval_junit",
]

OOS = "OOS"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


class EvalExample(BaseModel):
    """One held-back utterance and what it means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    lang: str = Field(min_length=2)
    intent: str = Field(description="intent, FAQ id, small-talk intent, OOS or inform")
    entities: dict[str, str | int | float | date] = {}
    expects: str | None = Field(None, description="the slot the assistant just asked for")


class EvalFile(BaseModel):
    """A held-back example set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domain: str | None = None
    today: date = date(2025, 3, 10)
    examples: list[EvalExample] = Field(min_length=1)


def heldout_path(source: str | Path) -> Path | None:
    """The held-back examples of a domain: ``NAME.eval.yaml`` beside a domain file, or the
    shipped example's; ``None`` when there is none."""
    path = Path(source)
    if path.is_file():
        stem = path.name.removesuffix(path.suffix)
        for suffix in (".eval.yaml", ".eval.yml", ".eval.json"):
            beside = path.with_name(stem + suffix)
            if beside.is_file():
                return beside
        return None
    return example_path(str(source), ".eval.yaml")


def load_eval(source: str | Path | Mapping[str, Any]) -> EvalFile:
    """A held-back example set from a file or plain data.

    Raises:
        DomainError: the file is missing, unreadable or not of the expected shape.
    """
    where: str | None = None
    if isinstance(source, Mapping):
        data: Any = source
    else:
        where = str(source)
        data = parse_file(Path(source), "held-back example file")[0]
    try:
        return EvalFile.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise DomainError(problems, path=where) from exc


def _labels(domain: Domain) -> set[str]:
    return {*domain.intents, *domain.faq, OOS, INFORM}


def _check(domain: Domain, examples: EvalFile) -> None:
    known, problems = _labels(domain), []
    for index, example in enumerate(examples.examples):
        where = f"examples.{index}"
        if example.intent not in known:
            problems.append(
                f"{where}.intent: `{example.intent}` is no intent or FAQ id of `{domain.name}`, "
                "nor OOS or inform"
            )
        if example.lang not in domain.languages:
            problems.append(f"{where}.lang: `{example.lang}` is not a language of the domain")
        if example.expects is not None and example.expects not in domain.slots:
            problems.append(f"{where}.expects: `{example.expects}` is not a slot")
        for key in example.entities:
            if key.split(":", 1)[0] not in domain.entities:
                problems.append(f"{where}.entities: `{key}` is not an entity of the domain")
    if problems:
        raise DomainError(problems)


def understood_label(understood: Understanding) -> str:
    """The label an understanding is scored as: a FAQ id or small-talk intent for a question
    or small talk, else the intent type."""
    if understood.intent_type in ("QUESTION", "SMALL_TALK") and understood.match:
        return understood.match
    return understood.intent_type


def _value(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value)


def _expected(example: EvalExample) -> Counter[tuple[str, str]]:
    return Counter((key, _value(value)) for key, value in example.entities.items())


def _found(
    entities: Sequence[Entity], expected: Counter[tuple[str, str]]
) -> Counter[tuple[str, str]]:
    keys = {key for key, _ in expected}
    found: Counter[tuple[str, str]] = Counter()
    for item in entities:
        key = item.entity
        if item.role is not None and f"{item.entity}:{item.role}" in keys:
            key = f"{item.entity}:{item.role}"
        found[(key, _value(item.value))] += 1
    return found


@dataclass(frozen=True, slots=True)
class Outcome:
    """One example's result: what was expected and what the recogniser said."""

    example: EvalExample
    predicted: str
    confidence: float
    entities_expected: Counter[tuple[str, str]]
    entities_found: Counter[tuple[str, str]]

    @property
    def intent_ok(self) -> bool:
        return self.predicted == self.example.intent

    @property
    def entities_ok(self) -> bool:
        return self.entities_expected == self.entities_found


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _f1(precision: float, recall: float) -> float:
    return _ratio(2 * precision * recall, precision + recall)


@dataclass(frozen=True, slots=True)
class Scores:
    """The figures for a set of outcomes (one language, or all)."""

    examples: int
    intent_accuracy: float
    per_intent: dict[str, dict[str, float]]
    confusion: dict[str, dict[str, int]]
    entity_precision: float
    entity_recall: float
    entity_f1: float
    entity_support: int

    @classmethod
    def of(cls, outcomes: Sequence[Outcome]) -> Scores:
        confusion: dict[str, dict[str, int]] = {}
        for o in outcomes:
            row = confusion.setdefault(o.example.intent, {})
            row[o.predicted] = row.get(o.predicted, 0) + 1
        labels = sorted({o.example.intent for o in outcomes} | {o.predicted for o in outcomes})
        per_intent: dict[str, dict[str, float]] = {}
        for label in labels:
            tp = sum(o.intent_ok and o.predicted == label for o in outcomes)
            said = sum(o.predicted == label for o in outcomes)
            support = sum(o.example.intent == label for o in outcomes)
            precision, recall = _ratio(tp, said), _ratio(tp, support)
            per_intent[label] = {
                "precision": precision,
                "recall": recall,
                "f1": _f1(precision, recall),
                "support": support,
            }
        tp = sum(((o.entities_expected & o.entities_found).total() for o in outcomes), 0)
        found = sum((o.entities_found.total() for o in outcomes), 0)
        expected = sum((o.entities_expected.total() for o in outcomes), 0)
        precision = _ratio(tp, found) if found else (1.0 if not expected else 0.0)
        recall = _ratio(tp, expected) if expected else (1.0 if not found else 0.0)
        return cls(
            examples=len(outcomes),
            intent_accuracy=_ratio(sum(o.intent_ok for o in outcomes), len(outcomes)),
            per_intent=per_intent,
            confusion=confusion,
            entity_precision=precision,
            entity_recall=recall,
            entity_f1=_f1(precision, recall),
            entity_support=expected,
        )

    def to_data(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "intent_accuracy": round(self.intent_accuracy, 4),
            "entity_precision": round(self.entity_precision, 4),
            "entity_recall": round(self.entity_recall, 4),
            "entity_f1": round(self.entity_f1, 4),
            "entity_support": self.entity_support,
            "per_intent": {
                k: {m: round(v, 4) for m, v in row.items()} for k, row in self.per_intent.items()
            },
            "confusion": self.confusion,
        }


@dataclass(frozen=True, slots=True)
class EvalReport:
    """The evaluation of one domain on its held-back examples."""

    domain: str
    recognizer: str
    outcomes: list[Outcome]
    seconds: float
    by_lang: dict[str, Scores] = field(default_factory=dict)
    overall: Scores | None = None

    def to_data(self) -> dict[str, Any]:
        assert self.overall is not None
        return {
            "domain": self.domain,
            "recognizer": self.recognizer,
            "overall": self.overall.to_data(),
            "languages": {lang: s.to_data() for lang, s in self.by_lang.items()},
            "misses": [
                {
                    "lang": o.example.lang,
                    "text": o.example.text,
                    "expected": o.example.intent,
                    "predicted": o.predicted,
                    "entities_missing": sorted(
                        f"{k}={v}" for k, v in (o.entities_expected - o.entities_found)
                    ),
                    "entities_extra": sorted(
                        f"{k}={v}" for k, v in (o.entities_found - o.entities_expected)
                    ),
                }
                for o in self.outcomes
                if not (o.intent_ok and o.entities_ok)
            ],
        }


def evaluate(
    domain: Domain,
    examples: EvalFile,
    *,
    llm: Any = None,
    recognizer: Recognizer | None = None,
) -> EvalReport:
    """Run the recogniser (the LLM one when ``llm`` is given, else the offline one) on every
    held-back example and score it.

    Raises:
        DomainError: an example names an intent, language, slot or entity the domain lacks.
    """
    _check(domain, examples)
    if recognizer is None:
        offline = OfflineRecognizer(domain)
        recognizer = LLMRecognizer(domain, offline) if llm is not None else offline
    started = time.perf_counter()
    outcomes = []
    for example in examples.examples:
        context = TurnContext(expects=example.expects, lang=example.lang, today=examples.today)
        understood = recognizer.understand(example.text, context, llm)
        expected = _expected(example)
        outcomes.append(
            Outcome(
                example=example,
                predicted=understood_label(understood),
                confidence=understood.confidence,
                entities_expected=expected,
                entities_found=_found(understood.entities, expected),
            )
        )
    langs = [lang for lang in domain.languages if any(o.example.lang == lang for o in outcomes)]
    return EvalReport(
        domain=domain.name,
        recognizer="llm" if llm is not None else "offline",
        outcomes=outcomes,
        seconds=time.perf_counter() - started,
        by_lang={
            lang: Scores.of([o for o in outcomes if o.example.lang == lang]) for lang in langs
        },
        overall=Scores.of(outcomes),
    )


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def format_eval(report: EvalReport) -> str:
    """The report as text: a summary per language, per-intent precision and recall, the
    confusion matrix (rows: expected, columns: predicted) and the misses."""
    assert report.overall is not None
    lines = [f"{report.domain} ({report.recognizer} recogniser), held-back examples"]
    lines.append(f"{'language':<10} {'examples':>8} {'intent acc':>10} {'entity F1':>10}")
    rows = [*report.by_lang.items(), ("all", report.overall)]
    for lang, s in rows:
        lines.append(
            f"{lang:<10} {s.examples:>8} {_pct(s.intent_accuracy):>10} {_pct(s.entity_f1):>10}"
        )
    overall = report.overall
    width = max(len(k) for k in overall.per_intent)
    lines += ["", f"{'intent':<{width}} {'precision':>9} {'recall':>7} {'support':>7}"]
    for label, row in overall.per_intent.items():
        lines.append(
            f"{label:<{width}} {_pct(row['precision']):>9} {_pct(row['recall']):>7} "
            f"{int(row['support']):>7}"
        )
    labels = list(overall.per_intent)
    lines += ["", "confusion matrix (rows: expected, columns: predicted, by number)"]
    lines.append(" " * (width + 4) + " ".join(f"{i:>3}" for i in range(1, len(labels) + 1)))
    for index, label in enumerate(labels, 1):
        counts = overall.confusion.get(label, {})
        cells = " ".join(f"{counts.get(col, 0) or '.':>3}" for col in labels)
        lines.append(f"{index:>2} {label:<{width}} {cells}")
    misses = [o for o in report.outcomes if not (o.intent_ok and o.entities_ok)]
    if misses:
        lines += ["", f"misses ({len(misses)})"]
        for o in misses:
            what = []
            if not o.intent_ok:
                what.append(f"intent {o.predicted} (expected {o.example.intent})")
            lost = sorted(f"{k}={v}" for k, v in (o.entities_expected - o.entities_found))
            extra = sorted(f"{k}={v}" for k, v in (o.entities_found - o.entities_expected))
            if lost:
                what.append("missed " + ", ".join(lost))
            if extra:
                what.append("extra " + ", ".join(extra))
            lines.append(f"- [{o.example.lang}] {o.example.text!r}: {'; '.join(what)}")
    return "\n".join(lines) + "\n"


def eval_junit_xml(report: EvalReport) -> bytes:
    """The report as JUnit XML: a ``testsuite`` per language, a ``testcase`` per example,
    a ``failure`` when the intent or the entities differ."""
    root = etree.Element("testsuites", name="flowkit dialogue eval")
    for lang in report.by_lang:
        cases = [o for o in report.outcomes if o.example.lang == lang]
        failed = [o for o in cases if not (o.intent_ok and o.entities_ok)]
        suite = etree.SubElement(
            root,
            "testsuite",
            name=f"{report.domain}.{lang}",
            tests=str(len(cases)),
            failures=str(len(failed)),
            errors="0",
        )
        for index, o in enumerate(cases, 1):
            case = etree.SubElement(
                suite, "testcase", classname=f"{report.domain}.{lang}", name=_xml(o.example.text)
            )
            if o.intent_ok and o.entities_ok:
                continue
            message = f"example {index}: intent {o.predicted} (expected {o.example.intent})"
            if o.intent_ok:
                message = f"example {index}: entities differ"
            failure = etree.SubElement(case, "failure", type="EvalMismatch", message=_xml(message))
            failure.text = _xml(
                f"expected entities {sorted(o.entities_expected)}\n"
                f"found entities {sorted(o.entities_found)}\n"
            )
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))


def _xml(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def write_eval_junit(path: str | os.PathLike[str], report: EvalReport) -> None:
    """Write the JUnit report to ``path`` atomically."""
    write_atomically(path, eval_junit_xml(report))
