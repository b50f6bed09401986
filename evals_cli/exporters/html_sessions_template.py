"""The recorded-sessions HTML report's page (`evals analyze --html`, a sessions suite's report): its own table
and session details, assembled from the parts the live report's page shares (html_template.py: head, filter
bar, notes, histograms, foot, stylesheet and script). Rendered with autoescape on, like the live page."""

from __future__ import annotations

from evals_cli.exporters.html_template import assemble

SESSIONS_TEMPLATE = """{{ page_head }}
  <h1>{{ s.name }}</h1>
  <p class="meta">evals-cli sessions report · started {{ s.started_at or "—" }} · {{ "%.1f"|format(s.duration_s) }} s ·
    status {{ s.status }}{% if s.dataset %} · dataset {{ s.dataset }}{% endif %}</p>
{{ run_notes }}
{% if g is not none and g.checks %}
<table id="gate-checks" style="width:auto">
  <thead><tr><th>check</th><th class="num">measured</th><th class="num">needed</th><th>result</th></tr></thead>
  <tbody>{% for c in g.checks %}
    <tr><td>{{ c.name }}{% if c.detail %} <span class="muted">({{ c.detail }})</span>{% endif %}</td>
      <td class="num">{{ "—" if c.metric is none else "%.3f"|format(c.metric) }}</td>
      <td class="num">≥ {{ "%g"|format(c.value) }}</td>
      <td class="{{ 'err' if c.passed is none else ('good' if c.passed else 'bad') }}">
        {{ "nothing to measure" if c.passed is none else ("passed" if c.passed else "failed") }}</td></tr>
  {% endfor %}</tbody>
</table>
{% endif %}

<section class="cards" id="summary">
  {% set c = s.conversation %}
  <div class="card"><div class="n">{{ s.sessions }}</div><div class="l">sessions</div></div>
  <div class="card"><div class="n err">{{ s.errored }}</div><div class="l">errored</div></div>
  <div class="card"><div class="n {{ score_class(s.mean_overall_score) }}">{{ s.mean_overall_score|score }}</div>
    <div class="l">mean overall score</div></div>
  <div class="card"><div class="n">
    {{- "—" if s.task_completion_rate is none else "{:.0%}".format(s.task_completion_rate) }}</div>
    <div class="l">task completion</div></div>
  <div class="card"><div class="n {{ 'bad' if c.bad_responses else 'good' }}">
    {{- c.bad_responses }} / {{ c.total_responses }}</div>
    <div class="l">bad turns (ccm {{ c.ccm_detections }}, rdm {{ c.rdm_detections }}, hallucination
      {{ c.hallucination_detections }}, judge {{ c.llm_judge_detections }}
      {%- if c.overruled_detections %}; {{ c.overruled_detections }} overruled{% endif %})</div></div>
  <div class="card"><div class="n">
    {%- for sev, n in s.violations_by_severity|dictsort %}{{ n }} {{ sev }}{{ ", " if not loop.last }}
    {%- else %}0{% endfor %}</div><div class="l">tool violations</div></div>
  {% if s.min_agent %}
  <div class="card"><div class="n {{ score_class(s.min_agent.score) }}">{{ s.min_agent.score|score }}</div>
    <div class="l">lowest agent: {{ s.min_agent.agent_id }} in {{ s.min_agent.session_id }}</div></div>
  {% endif %}
  <div class="card"><div class="n">{{ s.judge.model or "off" }}</div>
    <div class="l">judge{% if s.judge.model %}: {{ s.judge.calls }} calls, {{ s.judge.errors|length }} without a verdict,
      {{ "{:,}".format(s.judge.prompt_tokens + s.judge.completion_tokens) }} tokens
      {%- else %} (deterministic metrics only){% endif %}</div></div>
</section>

<section id="agents">
<h2>Agents</h2>
<div class="charts">
  <table style="width:auto">
    <thead><tr><th>agent</th><th class="num">mean overall</th></tr></thead>
    <tbody>{% for agent, mean in s.per_agent_mean.items() %}
      <tr><td>{{ agent }}</td><td class="num {{ score_class(mean) }}">{{ mean|score }}</td></tr>
    {% endfor %}</tbody>
  </table>
</div>
{{ histograms }}
</section>

{% macro num(value, css) -%}
<td class="num {{ css }}" data-sort="{{ '' if value is none else value }}">{{ value|score }}</td>
{%- endmacro %}
<section id="samples-section">
<h2>Sessions</h2>
<p id="pass-rule" class="muted">The gate decides over all sessions (see its checks above); a session has no verdict
  of its own. Scores are coloured green from 0.8, amber from 0.5, red below (intent drift: lower is better).</p>
{{ controls }}
<div class="scroll">
<table id="samples" class="sortable" data-noun="{{ v.noun }}">
  <thead><tr>
    <th data-key="index" data-type="num" class="num">#</th>
    <th data-key="sample" data-type="text">session</th>
    <th data-key="score" data-type="num" class="num">overall</th>
    <th data-key="task" data-type="text">task</th>
    <th data-key="bad" data-type="num" class="num">bad turns</th>
    <th data-key="violations" data-type="num" class="num">tool violations</th>
    <th data-key="tooluse" data-type="num" class="num">tool use</th>
    <th data-key="coordination" data-type="num" class="num">coordination</th>
    <th data-key="drift" data-type="num" class="num">drift</th>
    <th data-key="result" data-type="text">findings</th>
    <th data-key="latency" data-type="num" class="num">time (s)</th>
  </tr></thead>
  <tbody>
  {% for sv in v.sessions %}
    {% set a = sv.analysis %}
    <tr data-status="{{ sv.status }}" data-sample="{{ sv.name }}" data-anchor="{{ sv.anchor }}">
      <td class="num" data-sort="{{ sv.index }}">{{ sv.index }}</td>
      <td class="id" data-sort="{{ sv.name }}"><a href="#{{ sv.anchor }}">{{ sv.name }}</a></td>
      {{ num(a.overall_score, score_class(a.overall_score)) }}
      <td class="{{ 'muted' if a.task_completion is none else ('good' if a.task_completion else 'bad') }}">
        {{- "?" if a.task_completion is none else ("completed" if a.task_completion else "not completed") }}</td>
      <td class="num" data-sort="{{ a.conversation.bad_responses }}">
        {{- a.conversation.bad_responses }} / {{ a.conversation.total_responses }}</td>
      <td class="num" data-sort="{{ a.tool_validation.violating_calls }}">{{ a.tool_validation.violating_calls }}</td>
      {{ num(a.tool_use_score, score_class(a.tool_use_score)) }}
      {{ num(a.coordination_score, score_class(a.coordination_score)) }}
      {{ num(a.intent_drift_score, drift_class(a.intent_drift_score)) }}
      <td data-sort="{{ sv.status }}"><span class="badge {{ sv.badge }}">{{ sv.status_text }}</span>
        {% if sv.problems and sv.status != "errored" %}
        <span class="muted">{{ sv.problems|join("; ") }}</span>{% endif %}</td>
      <td class="num" data-sort="{{ '' if a.latency.total_ms is none else a.latency.total_ms }}">
        {{- "—" if a.latency.total_ms is none else "%.2f"|format(a.latency.total_ms / 1000) }}</td>
    </tr>
  {% endfor %}
  </tbody>
</table>
</div>
</section>

<section id="conversations">
<h2>Sessions in detail</h2>
{% for sv in v.sessions %}
{% set a = sv.analysis %}
<details class="sample {{ sv.badge }}" id="{{ sv.anchor }}"
  {%- if sv.status != "clean" and v.sessions|length <= 25 %} open{% endif %}>
  <summary><span class="badge {{ sv.badge }}">{{ sv.status_text }}</span>
    <b>{{ sv.name }}</b> · overall
    <span class="{{ score_class(a.overall_score) }}">{{ a.overall_score|score }}</span></summary>
  <div class="body">
    {% if a.error %}<div class="error-box"><b>error</b>: {{ a.error }}</div>{% endif %}
    {% if a.task %}<p><b>task</b>: {{ a.task }}</p>{% endif %}
    <p class="muted">conversation {{ a.conversation_score|score }} · tool use {{ a.tool_use_score|score }} ·
      reasoning {{ a.reasoning_score|score }} · coordination {{ a.coordination_score|score }} · drift
      {{ a.intent_drift_score|score }} · task
      {{ "?" if a.task_completion is none else ("completed" if a.task_completion else "not completed") }}
      {%- if a.task_completion_source %} ({{ a.task_completion_source }}){% endif %}</p>
    {% for t in a.turn_results %}
    <div class="turn" data-turn="{{ t.turn_index + 1 }}">
      <div class="turn-head">Turn {{ t.turn_index + 1 }}
        {% if t.is_bad %}<span class="chip bad">{{ t.detection_type }} ({{ "%.2f"|format(t.confidence) }})</span>
        {% else %}<span class="chip good">good</span>{% endif %}</div>
      {% if t.reason %}<div class="text">{{ t.reason }}</div>{% endif %}
      {% for d in t.detections %}
      <div class="muted detection">{{ d.type }} · {{ d.source }} · confidence {{ "%.2f"|format(d.confidence) }}
        {%- if d.overruled_by_judge %} · <span class="warn">overruled by the judge
          {%- if d.judge_reason %}: {{ d.judge_reason }}{% endif %}</span>{% endif %}
        <pre>{{ d.evidence }}</pre></div>
      {% endfor %}
      {% if t.interactions %}
      <table class="grades interactions">
        <thead><tr><th>agent</th><th class="num">score</th><th class="num">tool use</th><th class="num">reasoning</th>
          <th class="num">handoff</th><th class="num">response</th><th>notes</th></tr></thead>
        <tbody>{% for i in t.interactions %}
          <tr><td>{{ i.agent_id }}{% if i.handoff_to %} <span class="muted">→ {{ i.handoff_to }}</span>{% endif %}</td>
            {% for value in (i.score, i.tool_use_score, i.reasoning_score, i.handoff_score, i.response_quality) %}
            <td class="num {{ score_class(value) if value is not none else 'muted' }}">{{ value|score }}</td>
            {% endfor %}
            <td>{% for n in i.notes %}<div class="text">{{ n }}</div>{% endfor %}</td></tr>
        {% endfor %}</tbody>
      </table>
      {% endif %}
    </div>
    {% endfor %}
    {% if a.per_agent_scores %}
    <h3>Agents</h3>
    <table class="agents">
      <thead><tr><th>agent</th><th class="num">overall</th><th class="num">tool use</th><th class="num">reasoning</th>
        <th class="num">handoff</th><th class="num">response</th><th class="num">interactions</th>
        <th>issues</th></tr></thead>
      <tbody>{% for agent, sc in a.per_agent_scores.items() %}
        <tr><td title="{{ sc.role }}">{{ agent }}</td>
          {% for value in (sc.overall, sc.tool_use, sc.reasoning, sc.handoff, sc.response_quality) %}
          <td class="num {{ score_class(value) if value is not none else 'muted' }}">{{ value|score }}</td>
          {% endfor %}
          <td class="num">{{ sc.interactions_count }}</td>
          <td>{% for issue in sc.issues %}<div>{{ issue }}</div>{% endfor %}</td></tr>
      {% endfor %}</tbody>
    </table>
    {% endif %}
    {% set co = a.coordination %}
    {% if co.redundant_calls or co.lost_handoffs or co.out_of_role_calls or co.reason %}
    <h3>Coordination</h3>
    {% if co.reason %}<div class="text">{{ co.reason }}</div>{% endif %}
    {% for label, items in (("redundant calls", co.redundant_calls), ("lost handoffs", co.lost_handoffs),
                            ("out-of-role calls", co.out_of_role_calls)) %}
    {% if items %}<div class="label">{{ label }}</div><ul>{% for x in items %}<li>{{ x }}</li>{% endfor %}</ul>{% endif %}
    {% endfor %}
    {% endif %}
    {% if a.tool_validation.violations %}
    <h3>Tool violations</h3>
    <table class="violations">
      <thead><tr><th>turn</th><th>agent</th><th>tool</th><th>kind</th><th>severity</th><th>detail</th></tr></thead>
      <tbody>{% for tv in a.tool_validation.violations %}
        <tr><td>{{ tv.turn_index + 1 }}</td><td>{{ tv.agent_id }}</td><td><code>{{ tv.tool }}</code></td>
          <td>{{ tv.kind }}</td>
          <td class="{{ 'bad' if tv.severity == 'HIGH' else 'mid' }}">{{ tv.severity }}</td><td>{{ tv.detail }}</td></tr>
      {% endfor %}</tbody>
    </table>
    {% endif %}
    {% if a.recommendations %}
    <h3>Recommendations</h3>
    <ul class="recommendations">{% for rec in a.recommendations %}<li>{{ rec }}</li>{% endfor %}</ul>
    {% endif %}
    {% if a.judge.errors %}
    <h3>Judge calls without a verdict</h3>
    {% for e in a.judge.errors %}<pre>{{ e }}</pre>{% endfor %}
    {% endif %}
    {% set lat = a.latency %}
    <p class="muted">{% if lat.total_ms is not none %}latency {{ "%.2f"|format(lat.total_ms / 1000) }} s{% endif %}
      {%- for label, step in (("slowest interaction", lat.slowest_interaction),
                              ("slowest tool call", lat.slowest_tool_call)) if step %} · {{ label }} {{ step.name }}
        {{ "%.0f"|format(step.latency_ms) }} ms{% endfor %}
      {%- if a.judge.model %} · judge {{ a.judge.model }}: {{ a.judge.calls }} calls{% endif %}</p>
  </div>
</details>
{% endfor %}
{{ page_foot }}
"""

SESSIONS_TEMPLATE = assemble(SESSIONS_TEMPLATE)
