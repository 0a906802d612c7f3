/*
 * The rasteriser of `uform synth`: five shapes as signed distance functions, antialiased by the
 * coverage of each pixel's centre distance over one pixel, over a lightly noisy grey background.
 */
#include <math.h>
#include <string.h>

#include "synth.h"

static double clamp(double value, double low, double high) { return value < low ? low : value > high ? high : value; }

/* A polygon's signed distance (negative inside), after Inigo Quilez's sdPolygon: the distance to
 * the nearest edge, its sign from the crossing count of a ray from the point. */
static double polygon_distance(const double (*vertices)[2], int count, double x, double y) {
    double dx = x - vertices[0][0], dy = y - vertices[0][1];
    double nearest = dx * dx + dy * dy, sign = 1;
    for (int i = 0, j = count - 1; i < count; j = i, ++i) {
        double ex = vertices[j][0] - vertices[i][0], ey = vertices[j][1] - vertices[i][1];
        double wx = x - vertices[i][0], wy = y - vertices[i][1];
        double t = clamp((wx * ex + wy * ey) / (ex * ex + ey * ey), 0, 1);
        double bx = wx - ex * t, by = wy - ey * t;
        if (bx * bx + by * by < nearest) nearest = bx * bx + by * by;
        int above = y >= vertices[i][1], below = y < vertices[j][1], left = ex * wy > ey * wx;
        if ((above && below && left) || (!above && !below && !left)) sign = -sign;
    }
    return sign * sqrt(nearest);
}

static double box_distance(double x, double y, double half_x, double half_y) {
    double qx = fabs(x) - half_x, qy = fabs(y) - half_y;
    double outside = hypot(qx > 0 ? qx : 0, qy > 0 ? qy : 0);
    double inside = qx > qy ? qx : qy;
    return outside + (inside < 0 ? inside : 0);
}

double synth_shape_distance(int shape, double x, double y, double cx, double cy, double radius) {
    const double pi = 3.14159265358979323846;
    double px = x - cx, py = y - cy; /* y grows downwards */
    switch (shape) {
    case 0: return hypot(px, py) - radius;
    case 1: return box_distance(px, py, 0.86 * radius, 0.86 * radius);
    case 2: {
        /* Equilateral, pointing up, centred on its centroid. */
        double r = 1.2 * radius, vertices[3][2];
        for (int k = 0; k < 3; ++k)
            vertices[k][0] = r * cos(-pi / 2 + 2 * pi * k / 3), vertices[k][1] = r * sin(-pi / 2 + 2 * pi * k / 3);
        return polygon_distance((const double(*)[2])vertices, 3, px, py + 0.1 * radius);
    }
    case 3: {
        double arm = 0.34 * radius, a = box_distance(px, py, radius, arm), b = box_distance(px, py, arm, radius);
        return a < b ? a : b;
    }
    default: {
        /* Five points, outer radius 1.2 r and inner 0.5 r, one point up. */
        double vertices[10][2];
        for (int k = 0; k < 10; ++k) {
            double r = (k % 2 ? 0.5 : 1.2) * radius, angle = -pi / 2 + pi * k / 5;
            vertices[k][0] = r * cos(angle), vertices[k][1] = r * sin(angle);
        }
        return polygon_distance((const double(*)[2])vertices, 10, px, py);
    }
    }
}

void synth_draw_shape(uint8_t *pixels, size_t width, size_t height, int shape, const uint8_t rgb[3], double cx,
                      double cy, double radius) {
    /* Only the box that can hold the shape (1.2 r plus a pixel of antialiasing) is visited. */
    double reach = 1.25 * radius + 2;
    long x0 = (long)floor(cx - reach), x1 = (long)ceil(cx + reach), y0 = (long)floor(cy - reach), y1 = (long)ceil(cy + reach);
    for (long y = y0 < 0 ? 0 : y0; y <= y1 && y < (long)height; ++y)
        for (long x = x0 < 0 ? 0 : x0; x <= x1 && x < (long)width; ++x) {
            double coverage = clamp(0.5 - synth_shape_distance(shape, (double)x + 0.5, (double)y + 0.5, cx, cy, radius), 0, 1);
            if (coverage <= 0) continue;
            uint8_t *pixel = pixels + ((size_t)y * width + (size_t)x) * 3;
            for (int c = 0; c < 3; ++c) pixel[c] = (uint8_t)lrint(pixel[c] + coverage * ((double)rgb[c] - pixel[c]));
        }
}

static void fill_background(uint8_t *rgb, size_t width, size_t height, const double base[3], double noise,
                            synth_random_t *random) {
    for (size_t i = 0; i < width * height; ++i) {
        double grain = noise * synth_random_normal(random); /* grey grain: the same offset on every channel */
        for (int c = 0; c < 3; ++c) rgb[i * 3 + c] = (uint8_t)lrint(clamp(base[c] + grain, 0, 255));
    }
}

static void draw_tint(double base[3], synth_random_t *random) {
    double level = synth_random_range(random, 215, 240);
    for (int c = 0; c < 3; ++c) base[c] = level + synth_random_range(random, -6, 6);
}

void synth_draw_background(uint8_t *rgb, size_t width, size_t height, double noise, synth_random_t *random) {
    double base[3];
    draw_tint(base, random);
    fill_background(rgb, width, height, base, noise, random);
}

void synth_place(const synth_scene_t *scene, size_t size, synth_random_t *random, double *cx, double *cy,
                 double *radius) {
    static const double places[SYNTH_PLACES][2] = {{0.29, 0.5}, {0.71, 0.5}, {0.5, 0.29}, {0.5, 0.71}, {0.5, 0.5}};
    double side = (double)size;
    *radius = side * (scene->size == 0 ? synth_random_range(random, 0.13, 0.15) : synth_random_range(random, 0.20, 0.22));
    *cx = side * (places[scene->place][0] + synth_random_range(random, -0.025, 0.025));
    *cy = side * (places[scene->place][1] + synth_random_range(random, -0.025, 0.025));
}

void synth_draw_clip(const synth_scene_t *scene, size_t size, size_t frames, synth_random_t *random, uint8_t *rgb) {
    double side = (double)size, base[3];
    draw_tint(base, random);
    double radius = side * synth_random_range(random, 0.18, 0.21);
    /* From one side to the other along the motion, at a random height (or column) across it; a
     * star reaches 1.2 radii, so it stays inside the frame. */
    double start = side * synth_random_range(random, 0.26, 0.31), end = side - side * synth_random_range(random, 0.26, 0.31);
    double across = side * synth_random_range(random, 0.35, 0.65);
    if (scene->motion == 0 || scene->motion == 2) {
        double swap = start;
        start = end, end = swap;
    }
    size_t stride = size * size * 3;
    for (size_t f = 0; f < frames; ++f) {
        double along = start + (end - start) * (double)f / (double)(frames > 1 ? frames - 1 : 1);
        double cx = scene->motion < 2 ? along : across, cy = scene->motion < 2 ? across : along;
        fill_background(rgb + f * stride, size, size, base, 4.0, random);
        synth_draw_shape(rgb + f * stride, size, size, scene->shape, synth_colours[scene->colour], cx, cy, radius);
    }
}
