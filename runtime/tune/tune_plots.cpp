// tokens_per_s_svg and plan_vs_measured_svg: axes, bars and points in plain SVG.
#include "runtime/tune/tune_plots.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace zt {

namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// An axis label: whole numbers from 10 up, one decimal below.
std::string tick(double v) {
  char b[32];
  std::snprintf(b, sizeof b, v >= 10 ? "%.0f" : "%.1f", v);
  return b;
}

std::string text(double x, double y, const std::string& s, const char* anchor = "middle", int size = 11,
                 const char* extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(size) +
         "\" font-family=\"sans-serif\" text-anchor=\"" + anchor + "\" " + extra + ">" + s + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* style) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) + "\" style=\"" +
         style + "\"/>\n";
}

const char* kColors[] = {"#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c", "#dc7ec0", "#797979"};

// A value axis from 0 to a round number above `top`, with five ticks; returns the axis maximum.
double axis_max(double top) {
  if (top <= 0) return 1;
  double step = 1;
  while (step * 10 < top) step *= 10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (step * m >= top) return step * m;
  return step * 10;
}

}  // namespace

std::string tokens_per_s_svg(const TuneResult& r) {
  // Trials by cell, in cell order of first appearance, then by micro batch.
  std::vector<std::string> cells;
  std::map<std::string, std::vector<const TrialRow*>> by_cell;
  for (const TrialRow& row : r.rows) {
    const std::string c = row.spec.cell.name();
    if (!by_cell.count(c)) cells.push_back(c);
    by_cell[c].push_back(&row);
  }
  double top = 0;
  for (const TrialRow& row : r.rows)
    if (row.ok()) top = std::max(top, row.median_tokens_per_s());
  const double ymax = axis_max(top), left = 70, bottom = 300, height = 240, bar = 18, gap = 24;
  const double width = left + 20 + double(r.rows.size()) * bar + double(cells.size()) * gap;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"370\">\n";
  s += text(width / 2, 18, "tokens/s per trial (median of its runs), by cell", "middle", 13);
  for (int k = 0; k <= 5; ++k) {
    const double y = bottom - height * k / 5;
    s += line(left, y, width - 10, y, "stroke:#ddd");
    s += text(left - 6, y + 4, tick(ymax * k / 5), "end", 10);
  }
  double x = left + gap / 2;
  for (size_t c = 0; c < cells.size(); ++c) {
    std::vector<const TrialRow*> rows = by_cell[cells[c]];
    std::stable_sort(rows.begin(), rows.end(),
                     [](const TrialRow* a, const TrialRow* b) { return a->spec.micro_batch < b->spec.micro_batch; });
    const double start = x;
    for (const TrialRow* row : rows) {
      const bool best = r.best && &r.rows[*r.best] == row;
      if (row->ok()) {
        const double h = height * row->median_tokens_per_s() / ymax;
        s += "<rect x=\"" + num(x) + "\" y=\"" + num(bottom - h) + "\" width=\"" + num(bar - 3) + "\" height=\"" + num(h) +
             "\" fill=\"" + kColors[c % 8] + "\"" + (best ? " stroke=\"black\" stroke-width=\"2\"" : "") + "/>\n";
      } else {
        s += text(x + bar / 2 - 1, bottom - 4, "x", "middle", 13, "fill=\"crimson\"");
      }
      s += text(x + bar / 2 - 1, bottom + 13, std::to_string(row->spec.micro_batch), "middle", 9);
      x += bar;
    }
    std::string label = cells[c];
    for (const auto& [cell, mx] : r.max_micro)
      if (cell.name() == cells[c]) label += " (fits " + std::to_string(mx) + ")";
    s += text((start + x) / 2, bottom + 28, label, "middle", 10);
    x += gap;
  }
  s += line(left, bottom, width - 10, bottom, "stroke:black");
  s += text(16, bottom - height / 2, "tokens/s", "middle", 11, "transform=\"rotate(-90 16 180)\"");
  s += text(width / 2, bottom + 48, "micro batch per rank under each bar; x: oom, error or timeout; outlined: the pick",
            "middle", 10);
  return s + "</svg>\n";
}

std::string plan_vs_measured_svg(const TuneResult& r) {
  constexpr double kMiB = 1024.0 * 1024.0;
  double top = 0;
  for (const TrialRow& row : r.rows)
    if (row.ok())
      for (const TrialOutcome& o : row.runs) top = std::max({top, row.plan.peak_bytes / kMiB, o.measured_peak_bytes / kMiB});
  const double m = axis_max(top * 1.1), left = 70, bottom = 320, size = 260;
  auto px = [&](double v) { return left + size * v / m; };
  auto py = [&](double v) { return bottom - size * v / m; };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(left + size + 30) + "\" height=\"380\">\n";
  s += text(left + size / 2, 18, "planned against measured peak per rank (MiB)", "middle", 13);
  // The ±10% band and the diagonal.
  s += "<polygon points=\"" + num(px(0)) + "," + num(py(0)) + " " + num(px(m)) + "," + num(py(m * 0.9)) + " " +
       num(px(m / 1.1)) + "," + num(py(m)) + "\" fill=\"#eef\"/>\n";
  s += line(px(0), py(0), px(m), py(m), "stroke:#888;stroke-dasharray:4");
  for (int k = 0; k <= 5; ++k) {
    const double v = m * k / 5;
    s += text(px(v), bottom + 14, tick(v), "middle", 9);
    s += text(left - 6, py(v) + 3, tick(v), "end", 9);
  }
  s += line(left, bottom, left + size, bottom, "stroke:black");
  s += line(left, bottom, left, bottom - size, "stroke:black");
  for (const TrialRow& row : r.rows) {
    if (!row.ok()) continue;
    double measured = 0;
    for (const TrialOutcome& o : row.runs) measured = std::max(measured, o.measured_peak_bytes);
    const double err = measured > 0 ? (row.plan.peak_bytes - measured) / measured : 0;
    s += "<circle cx=\"" + num(px(row.plan.peak_bytes / kMiB)) + "\" cy=\"" + num(py(measured / kMiB)) +
         "\" r=\"3.5\" fill=\"" + (err > 0.1 || err < -0.1 ? "crimson" : "#4878d0") + "\"><title>" + row.spec.name() +
         "</title></circle>\n";
  }
  s += text(left + size / 2, bottom + 32, "planned (MiB); red: more than 10% off", "middle", 10);
  s += text(16, bottom - size / 2, "measured (MiB)", "middle", 11, "transform=\"rotate(-90 16 190)\"");
  return s + "</svg>\n";
}

}  // namespace zt
