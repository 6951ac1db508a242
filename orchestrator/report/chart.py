"""The timeline drawn with Plotly: four rows on one time axis (calls, signals, suspicion, spend).

Plotly is imported here only, when a report is drawn (it costs ~0.3 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.report.text import plotly_label
from orchestrator.report.timeline import KINDS, Timeline

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

REGION_FILL = {
    "healthy": "rgba(46, 160, 67, 0.07)",
    "soft": "rgba(230, 160, 20, 0.16)",
    "stuck": "rgba(210, 50, 40, 0.14)",
}
KIND_COLOUR = {
    "errors": "#d62728",
    "polling": "#9467bd",
    "Bash": "#1f77b4",
    "Edit/Write": "#2ca02c",
    "Read": "#7f7f7f",
    "other": "#bcbd22",
}
SIGNAL_COLOUR = "#e07b00"
ROWS = ("tool calls", "signals", "suspicion", "spend")


def figure(tl: Timeline) -> Figure:
    from plotly.subplots import make_subplots

    signals = tl.signals
    fig = make_subplots(
        rows=4,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.05,
        row_heights=[0.30, max(0.12, 0.045 * len(signals)), 0.22, 0.16],
        subplot_titles=ROWS,
    )
    _calls(fig, tl)
    _signals(fig, signals)
    _suspicion(fig, tl)
    _spend(fig, tl)
    _shading(fig, tl)
    _marks(fig, tl)
    fig.update_layout(
        height=780,
        margin={"l": 110, "r": 30, "t": 70, "b": 50},
        showlegend=False,
        plot_bgcolor="white",
        hovermode="closest",
        bargap=0.35,
    )
    fig.update_xaxes(range=[0, max(tl.end_min, 1.0) * 1.01], showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_xaxes(title_text="run minutes", row=4, col=1)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    return fig


def _calls(fig: Figure, tl: Timeline) -> None:
    import plotly.graph_objects as go

    for kind in KINDS:
        calls = [c for c in tl.calls if c.kind == kind]
        if not calls:
            continue
        fig.add_trace(
            go.Scatter(
                x=[c.at_min for c in calls],
                y=[kind] * len(calls),
                mode="markers",
                marker={"color": KIND_COLOUR[kind], "size": 7, "symbol": "line-ns-open", "line": {"width": 2}},
                text=[plotly_label(c.brief) for c in calls],
                hovertemplate="%{x:.1f} min<br>%{text}<extra></extra>",
                name=kind,
            ),
            row=1,
            col=1,
        )
    present = [k for k in KINDS if any(c.kind == k for c in tl.calls)]
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(present)), row=1, col=1)


def _signals(fig: Figure, signals: dict[str, list[tuple[float, float]]]) -> None:
    import plotly.graph_objects as go

    names = list(signals)
    for name in names:
        spans = signals[name]
        fig.add_trace(
            go.Bar(
                x=[max(end - start, 0.05) for start, end in spans],
                base=[start for start, _ in spans],
                y=[name] * len(spans),
                orientation="h",
                marker={"color": SIGNAL_COLOUR},
                customdata=[[start, end] for start, end in spans],
                hovertemplate=f"{name}: on %{{customdata[0]:.1f}} to %{{customdata[1]:.1f}} min<extra></extra>",
                name=name,
            ),
            row=2,
            col=1,
        )
    if not names:
        fig.add_annotation(text="no signal fired", showarrow=False, xref="x2 domain", yref="y2 domain", x=0.5, y=0.5)
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(names)), row=2, col=1)


def _suspicion(fig: Figure, tl: Timeline) -> None:
    import plotly.graph_objects as go

    xs = [t.at_min for t in tl.ticks] + [tl.end_min]
    ys = [t.suspicion for t in tl.ticks] + [tl.ticks[-1].suspicion if tl.ticks else 0.0]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"shape": "hv", "color": "#d62728", "width": 2},
            fill="tozeroy",
            fillcolor="rgba(214, 39, 40, 0.12)",
            hovertemplate="%{x:.1f} min: suspicion %{y:g}<extra></extra>",
            name="suspicion",
        ),
        row=3,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=[0, tl.end_min],
            y=[tl.threshold, tl.threshold],
            mode="lines",
            line={"dash": "dash", "color": "#333", "width": 1},
            hovertemplate=f"threshold {tl.threshold:g}<extra></extra>",
            name="threshold",
        ),
        row=3,
        col=1,
    )
    fig.add_annotation(
        text=f"threshold {tl.threshold:g}",
        x=0,
        y=tl.threshold,
        xref="x3",
        yref="y3",
        xanchor="left",
        yanchor="bottom",
        showarrow=False,
        font={"size": 10},
    )
    top = max([*ys, tl.threshold]) * 1.15 + 0.5
    fig.update_yaxes(range=[0, top], row=3, col=1)


def _spend(fig: Figure, tl: Timeline) -> None:
    import plotly.graph_objects as go

    priced = bool(tl.spend) and all(usd is not None for _, _, usd in tl.spend)
    ys: list[Any] = [usd if priced else tokens for _, tokens, usd in tl.spend]
    fig.add_trace(
        go.Scatter(
            x=[0.0] + [m for m, _, _ in tl.spend],
            y=[0.0, *ys],
            mode="lines",
            line={"shape": "hv", "color": "#17becf", "width": 2},
            customdata=[0, *[tokens for _, tokens, _ in tl.spend]],
            hovertemplate=(
                "%{x:.1f} min: $%{y:.2f} (%{customdata:,} tokens)<extra></extra>"
                if priced
                else "%{x:.1f} min: %{y:,} tokens<extra></extra>"
            ),
            name="spend",
        ),
        row=4,
        col=1,
    )
    fig.update_yaxes(title_text="USD" if priced else "tokens", row=4, col=1)
    if priced:
        fig.update_yaxes(tickprefix="$", row=4, col=1)


def _shading(fig: Figure, tl: Timeline) -> None:
    """The regions behind every row, and the time the agent waited on its model API."""
    for region, start, end in tl.regions:
        fig.add_vrect(
            x0=start, x1=end, fillcolor=REGION_FILL.get(region, "white"), line_width=0, layer="below", row="all", col=1
        )
        if end - start < tl.end_min * 0.04:
            continue  # too narrow to label (a run that ended as it entered the region)
        fig.add_annotation(
            text=region,
            x=(start + end) / 2,
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            showarrow=False,
            font={"size": 11, "color": "#555"},
        )
    for start, end in tl.blocked:
        fig.add_vrect(x0=start, x1=end, fillcolor="rgba(0,0,0,0.12)", line_width=0, layer="below", row="all", col=1)


def _marks(fig: Figure, tl: Timeline) -> None:
    """The page, guidance and the ending as lines through every row, labelled at the top."""
    marks = [(m, "#d62728", "solid") for m in tl.pages]
    marks += [(m, "#1f77b4", "dot") for m in tl.guidance]
    if tl.ending is not None:
        marks.append((tl.ending, "#333", "dashdot"))
    right = max(tl.end_min, 1.0) * 0.9
    for i, (m, colour, dash) in enumerate(marks):
        fig.add_vline(x=m.at_min, line={"color": colour, "dash": dash, "width": 2}, row="all", col=1)
        fig.add_annotation(
            xanchor="right" if m.at_min > right else "center",
            text=f"<b>{plotly_label(m.label)}</b> {m.at_min:.0f} min",
            hovertext=plotly_label(m.detail) if m.detail else None,
            x=m.at_min,
            y=1.0,
            xref="x",
            yref="paper",
            yanchor="bottom",
            yshift=16 + 14 * (i % 2),
            showarrow=False,
            font={"size": 12, "color": colour},
        )
