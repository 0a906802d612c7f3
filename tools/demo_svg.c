/* Line charts as inline SVG for the demo's report (demo_report.h). */
#include <math.h>
#include <stdio.h>

#include "demo_report.h"

/* A "nice" tick step (1, 2 or 5 × 10^k) giving about `ticks` intervals over `span`. */
static double tick_step(double span, int ticks) {
    double raw = span / ticks, power = pow(10, floor(log10(raw))), fraction = raw / power;
    return power * (fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10);
}

void demo_svg_chart(FILE *out, const char *title, const char *x_label, const char *y_label, const demo_series_t *series,
                    size_t count, double width, double height, double y_min, double y_max) {
    double x_min = INFINITY, x_max = -INFINITY, data_min = INFINITY, data_max = -INFINITY;
    for (size_t s = 0; s < count; ++s)
        for (size_t i = 0; i < series[s].count; ++i) {
            x_min = fmin(x_min, series[s].x[i]), x_max = fmax(x_max, series[s].x[i]);
            data_min = fmin(data_min, series[s].y[i]), data_max = fmax(data_max, series[s].y[i]);
        }
    if (!isfinite(x_min)) x_min = 0, x_max = 1, data_min = 0, data_max = 1;
    if (x_min > 0) x_min = 0; /* steps: the axis starts where training did */
    if (x_max <= x_min) x_max = x_min + 1;
    if (y_max <= y_min) y_min = fmin(y_min, data_min), y_max = data_max > y_min ? data_max : y_min + 1;
    /* Plot area inside margins for the labels. */
    double left = 56, right = width - 16, top = 28, bottom = height - 40;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n",
            width, height, width, height);
    /* Presentation attributes rather than the page's CSS, so the chart also stands on its own. */
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<title>");
    demo_html_escape(out, title);
    fprintf(out, "</title>\n<text x=\"%.1f\" y=\"16\" font-size=\"13\" font-weight=\"600\" fill=\"#222\">", left);
    demo_html_escape(out, title);
    fprintf(out, "</text>\n");
    /* Grid and ticks. */
    double y_step = tick_step(y_max - y_min, 5), x_step = tick_step(x_max - x_min, 6);
    for (double y = ceil(y_min / y_step) * y_step; y <= y_max + 1e-9; y += y_step) {
        double py = bottom - (y - y_min) / (y_max - y_min) * (bottom - top);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>", left, py, right, py);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\" text-anchor=\"end\">%g</text>\n", left - 6, py + 4, y);
    }
    for (double x = ceil(x_min / x_step) * x_step; x <= x_max + 1e-9; x += x_step) {
        double px = left + (x - x_min) / (x_max - x_min) * (right - left);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>", px, top, px, bottom);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\" text-anchor=\"middle\">%g</text>\n", px, bottom + 16, x);
    }
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\"/>\n", left, top, right - left,
            bottom - top);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\" text-anchor=\"middle\">", (left + right) / 2, height - 6);
    demo_html_escape(out, x_label);
    fprintf(out, "</text>\n<text x=\"14\" y=\"%.1f\" font-size=\"11\" fill=\"#444\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
            (top + bottom) / 2, (top + bottom) / 2);
    demo_html_escape(out, y_label);
    fprintf(out, "</text>\n");
    /* One polyline per series, every point of it, clamped into the plot area. */
    for (size_t s = 0; s < count; ++s) {
        fprintf(out, "<polyline data-series=\"");
        demo_html_escape(out, series[s].name);
        fprintf(out, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"%s points=\"", series[s].colour,
                series[s].dashed ? " stroke-dasharray=\"5 3\"" : "");
        for (size_t i = 0; i < series[s].count; ++i) {
            double px = left + (series[s].x[i] - x_min) / (x_max - x_min) * (right - left);
            double py = bottom - (fmin(fmax(series[s].y[i], y_min), y_max) - y_min) / (y_max - y_min) * (bottom - top);
            fprintf(out, "%s%.1f,%.1f", i ? " " : "", px, py);
        }
        fprintf(out, "\"/>\n");
    }
    /* Legend, top right. */
    for (size_t s = 0; s < count; ++s) {
        double ly = top + 14 + 16 * (double)s, lx = right - 175;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>", lx, ly - 4,
                lx + 20, ly - 4, series[s].colour, series[s].dashed ? " stroke-dasharray=\"5 3\"" : "");
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444\">", lx + 26, ly);
        demo_html_escape(out, series[s].name);
        fprintf(out, "</text>\n");
    }
    fprintf(out, "</svg>\n");
}
