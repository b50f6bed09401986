"""Issue 29 item 1: the recorded-sessions HTML report shows each session's conversation (user text, every agent's
thoughts, tool calls with arguments and results, outputs, handoffs, the answer the user got) with the findings
pinned to the turn they concern, each kind explained in one line, and turn badges that follow the verdicts."""

from __future__ import annotations

import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from evals_cli.exporters.common import KINDS
from evals_cli.exporters.html_sessions import render_sessions_html
from evals_cli.report import load_sessions
from tests.helpers import run_cli
from tests.run_factory import XSS
from tests.scripted_server import ScriptedServer
from tests.test_sessions_overruled import lenient_judge

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"


class Turns(HTMLParser):
    """The text and the chips of every `div.turn` of every session (`details.sample` id -> turns)."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.sessions: dict[str, list[dict[str, Any]]] = {}
        self.session: str | None = None
        self.depth = 0  # open divs inside the current turn
        self.turn: dict[str, Any] | None = None
        self.chip = False
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "details" and "sample" in classes:
            self.session = a["id"]
            self.sessions[self.session] = []
        if tag == "div" and "turn" in classes and self.session:
            self.turn = {"number": int(a["data-turn"]), "text": [], "chips": [], "findings": []}
            self.sessions[self.session].append(self.turn)
            self.depth = 0
        if self.turn is not None:
            if tag == "div":
                self.depth += 1
            if tag == "span" and "chip" in classes and "turn-head" in self._head:
                self.turn["chips"].append([c for c in classes if c != "chip"][0])
            if tag == "div" and "finding" in classes:
                self.turn["findings"].append(a["data-kind"])
            self.chip = tag == "span" and "chip" in classes
        self._head = classes if tag == "div" else getattr(self, "_head", [])

    def handle_endtag(self, tag: str) -> None:
        if self.turn is not None and tag == "div":
            self.depth -= 1
            if self.depth == 0:
                self.turn = None

    def handle_data(self, data: str) -> None:
        if self.turn is not None:
            self.turn["text"].append(data)


def turn_text(turn: dict[str, Any]) -> str:
    return " ".join(" ".join(turn["text"]).split())


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sessions") / "run"
    result = run_cli("analyze", str(DATASET), "-o", str(out), "--no-judge")
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def page(analysed: Path) -> tuple[str, dict[str, list[dict[str, Any]]], dict[str, str]]:
    view = load_sessions(analysed)
    markup = render_sessions_html(view.analyses, view.summary)
    anchors = {a.session_id: f"s-{i}" for i, a in enumerate(view.analyses, 1)}
    return markup, Turns(markup).sessions, anchors


def recorded() -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in map(json.loads, DATASET.read_text().splitlines())}


def test_every_turn_shows_what_was_said_and_done(page: Any) -> None:
    _, sessions, anchors = page
    for session_id, session in recorded().items():
        turns = sessions[anchors[session_id]]
        assert [t["number"] for t in turns] == list(range(1, len(session["turns"]) + 1)), session_id
        for turn, shown in zip(session["turns"], turns, strict=True):
            said = turn_text(shown)
            assert " ".join(turn["user_message"].split()) in said
            assert " ".join(turn["final_response"].split()) in said
            for interaction in turn["agent_interactions"]:
                assert interaction["agent_id"] in said
                if interaction.get("handoff_to"):
                    assert f"→ hands off to {interaction['handoff_to']}" in said
                for step in interaction["agent_steps"]:
                    if step.get("tool_call"):
                        call = step["tool_call"]
                        assert f"tool call {call['tool_name']}" in said
                        for key, value in call["parameters"].items():
                            assert f'"{key}": {json.dumps(value)}' in said  # the arguments, whole
                    for key in ("thought", "output"):
                        if step.get(key):
                            assert " ".join(step[key].split()) in said


def test_findings_are_pinned_to_their_turn_and_explained(page: Any) -> None:
    markup, sessions, anchors = page
    hallucinated = sessions[anchors["refund-hallucinated-answer"]][0]
    said = turn_text(hallucinated)
    # the claim and what the tools returned side by side: RF-9999 and 43.99 are in the answer, not in the result
    assert "refund RF-9999" in said and '"amount": 34.99' in said
    assert hallucinated["findings"] == ["hallucination"] and KINDS["hallucination"] in said
    assert "RF-9999, 43.99 found in no tool result" in said
    corrected = sessions[anchors["refund-user-corrects"]]
    assert corrected[0]["findings"] == ["rdm"] and "turn 2 corrects the answer" in turn_text(corrected[0])
    assert corrected[1]["findings"] == [] and corrected[1]["chips"] == ["good"]
    reasked = sessions[anchors["refund-user-reasks"]][0]
    assert reasked["findings"] == ["ccm"] and KINDS["ccm"] in turn_text(reasked)
    lost = sessions[anchors["refund-lost-handoff"]][0]
    assert lost["findings"] == ["lost handoff"] and "ORD-1004, 12.50" in turn_text(lost)
    redone = sessions[anchors["refund-reviewer-redoes"]][0]
    assert redone["findings"] == ["redundant call"] and "reviewer redid lookup_order" in turn_text(redone)
    # and every kind is explained once for the whole page
    legend = markup.split('id="kinds"', 1)[1].split("</details>", 1)[0]
    for kind in ("ccm", "rdm", "hallucination", "llm_judge", "UNAUTHORIZED_TOOL", "HALLUCINATED_PARAMETER"):
        assert f"<code>{kind}</code>" in legend


def test_a_turn_badge_follows_every_verdict_on_it(page: Any) -> None:
    _, sessions, anchors = page
    unauthorized = sessions[anchors["refund-unauthorized-tool"]][0]
    assert "good" not in unauthorized["chips"] and unauthorized["chips"][0] == "bad"  # a HIGH violation: never good
    assert "HIGH: unauthorized_tool" in turn_text(unauthorized)
    assert unauthorized["findings"] == ["UNAUTHORIZED_TOOL"]
    parameter = sessions[anchors["refund-hallucinated-parameter"]][0]
    assert parameter["chips"] == ["mid"] and parameter["findings"] == ["HALLUCINATED_PARAMETER"]
    clean = sessions[anchors["refund-clean"]]
    assert all(t["chips"] == ["good"] and not t["findings"] for t in clean)


def test_the_page_says_when_the_recording_is_gone(analysed: Path, tmp_path: Path) -> None:
    view = load_sessions(analysed)
    moved = tmp_path / "elsewhere.jsonl"
    view.summary.dataset = str(moved)
    markup = render_sessions_html(view.analyses, view.summary)
    assert "the session file the run read is not there any more" in markup
    assert "The recorded conversation is not available" in markup
    shutil.copy(DATASET, moved)  # found again where the run read it: the conversations come back
    again = render_sessions_html(view.analyses, view.summary)
    assert "not there any more" not in again and "Please refund my toaster from order ORD-1007." in again
    assert "Please refund my toaster" in render_sessions_html(view.analyses, view.summary.model_copy(
        update={"dataset": "nowhere.jsonl"}), recording=DATASET)  # or given outright


def test_recorded_text_is_escaped(tmp_path: Path) -> None:
    session = recorded()["refund-hallucinated-answer"]
    session["turns"][0]["user_message"] = f"refund {XSS} please"
    session["turns"][0]["final_response"] = f"Done {XSS}"
    session["turns"][0]["agent_interactions"][1]["agent_steps"][0]["tool_call"]["result"] = {"note": XSS}
    data = tmp_path / "hostile.jsonl"
    data.write_text(json.dumps(session) + "\n")
    out = tmp_path / "run"
    assert run_cli("analyze", str(data), "-o", str(out), "--no-judge").returncode in (0, 1)
    view = load_sessions(out)
    markup = render_sessions_html(view.analyses, view.summary)
    assert XSS not in markup and len(re.findall(r"<script>", markup)) == 1
    assert "refund &lt;script&gt;alert(1)&lt;/script&gt; please" in markup


def test_an_overruled_detection_leaves_the_turn_good_and_says_so(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lenient_judge
    out = tmp_path / "run"
    result = run_cli("analyze", str(DATASET), "-o", str(out), "--judge-model", "scripted", "--judge-base-url",
                     server.url)
    assert result.returncode in (0, 1), result.stderr
    view = load_sessions(out)
    sessions = Turns(render_sessions_html(view.analyses, view.summary)).sessions
    anchor = next(f"s-{i}" for i, a in enumerate(view.analyses, 1) if a.session_id == "refund-user-reasks")
    turn = sessions[anchor][0]
    assert turn["chips"] == ["good", "muted"] and turn["findings"] == ["ccm"]
    said = turn_text(turn)
    assert "overruled by the judge" in said and "the answer looked fine to me" in said and KINDS["overruled"] in said


def test_a_recorded_sessions_run_explains_its_detectors_beside_the_conversations(tmp_path: Path) -> None:
    """`evals run` on a recorded_sessions suite writes the common report (the conversations as trajectories, the
    detectors as graders with a grade per turn); each detector it graded is explained in one line there too."""
    out = tmp_path / "run"
    done = run_cli("run", str(ROOT / "suites" / "multi_agent.yaml"), "--no-judge", "-o", str(out),
                   "--export", f"html={tmp_path / 'run.html'}")
    assert done.returncode == 1, done.stdout + done.stderr
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))
    legend = text.split("What the findings mean", 1)[1][:2000]
    for kind in ("ccm", "rdm", "hallucination"):
        assert f"{kind} {KINDS[kind]}" in legend, kind
    assert "RF-9999" in text  # the hallucinated refund id, in the conversation it was said in
