// The overview's plots, drawn by Chart.js (the pinned static asset vendor/chart.js) from the
// data frontend/charts.py computes: first from the page, then from each live snapshot.
// Only configuration here: the library does all the drawing.
"use strict";

const Charts = {
  drawn: {},
  colours: ["#2563eb", "#d97706", "#059669", "#7c3aed", "#dc2626", "#0891b2"],

  bar(id, labels, series, options = {}) {
    const datasets = Object.entries(series).map(([label, data], i) => ({
      label, data, backgroundColor: this.colours[i % this.colours.length],
    }));
    this.draw(id, "bar", labels, datasets, options);
  },

  line(id, labels, datasets, options = {}) {
    this.draw(id, "line", labels, datasets.map((dataset, i) => ({
      borderColor: this.colours[i % this.colours.length],
      backgroundColor: this.colours[i % this.colours.length],
      pointRadius: 0, tension: 0, ...dataset,
    })), options);
  },

  draw(id, type, labels, datasets, options) {
    const canvas = document.getElementById(id);
    if (!canvas || !window.Chart) return;
    const existing = this.drawn[id];
    if (existing) {
      // Redrawn in place, without animation: a live page must not flicker.
      existing.data.labels = labels;
      existing.data.datasets = datasets;
      existing.update("none");
      return;
    }
    this.drawn[id] = new window.Chart(canvas, {
      type,
      data: { labels, datasets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        plugins: { legend: { position: "bottom" } },
        scales: { y: { beginAtZero: true, ticks: { precision: 0 } } },
        ...options,
      },
    });
    canvas.dataset.drawn = "true";
  },

  // The approvals analytics page: time to decision, and outcomes stacked per agent type.
  renderAnalytics(data) {
    const decisions = data.decisionTime;
    this.bar("chart-analytics-decision-time", decisions.labels, { decisions: decisions.counts });
    const outcomes = data.outcomes;
    this.bar("chart-analytics-outcomes", outcomes.labels, outcomes.series, {
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
    });
  },

  // The Usage page: sandbox-hours per hour, stacked by team.
  renderUsage(data) {
    this.bar("chart-usage", data.labels, data.series, {
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } },
    });
  },

  render(data) {
    if (!data) return;
    const phases = data.timeToPhase;
    this.bar("chart-time-to-phase", phases.labels, phases.series);
    const timeline = data.phasesOverTime;
    this.line("chart-phases-over-time", timeline.labels, Object.entries(timeline.series).map(
      ([label, values]) => ({ label, data: values, fill: false }),
    ));
    const warm = data.warmPools;
    this.line("chart-warm-pools", warm.labels, warm.pools.flatMap((pool) => [
      { label: `${pool.pool} size`, data: pool.size, stepped: true, pointRadius: 2 },
      { label: `${pool.pool} claims/min`, data: pool.demand, borderDash: [4, 4], pointRadius: 2 },
    ]));
    const decisions = data.decisionTime;
    this.bar("chart-decision-time", decisions.labels, { decisions: decisions.counts });
    document.querySelectorAll("[data-chart-total]").forEach((element) => {
      const [chart, field] = element.dataset.chartTotal.split(".");
      element.textContent = data[chart][field];
    });
  },
};
window.Charts = Charts;

document.addEventListener("DOMContentLoaded", () => {
  const initial = document.getElementById("overview-charts");
  if (initial) Charts.render(JSON.parse(initial.textContent));
  const analytics = document.getElementById("analytics-charts");
  if (analytics) Charts.renderAnalytics(JSON.parse(analytics.textContent));
  const usage = document.getElementById("usage-plot");
  if (usage) Charts.renderUsage(JSON.parse(usage.textContent));
});
