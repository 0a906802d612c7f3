/*
 * `uform synth`: the same seed writes the same bytes (every file and manifest), another seed other
 * bytes; every file decodes through the engine's own decoders (src/media); and what each file
 * shows is what its caption says, judged from the decoded pixels and samples alone:
 *   pictures — the shape's colour (nearest palette colour of its interior), place (nearest of the
 *              five anchor points to its centroid), size (radius from its area) and shape (fill of
 *              its bounding box and the balance of its top and bottom halves);
 *   clips    — the colour and shape in the first frame and the direction from the first frame's
 *              centroid to the last one's;
 *   speech   — 2 s long at 16 kHz, with a loud stretch of speech-like length
 *              (0.5–1.9 s, within 0.3 s of the length espeak-ng reported) over faint noise.
 * Usage: test_synth UFORM_BINARY
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/read_file.h"
#include "media/media.h"

static const char *const shapes[5] = {"circle", "square", "triangle", "cross", "star"};
static const char *const colours[8] = {"red", "orange", "yellow", "green", "blue", "purple", "pink", "black"};
/* The palette as the caption vocabulary names it (tools/synth_world.c); the test keeps its own copy. */
static const double palette[8][3] = {{215, 35, 35},  {245, 135, 20}, {235, 205, 25},  {35, 160, 55},
                                     {35, 75, 215},  {135, 50, 185}, {245, 120, 195}, {30, 30, 30}};
/* Area of each shape in units of radius² (circle π, square 1.72², triangle and star from their vertices). */
static const double shape_areas[5] = {3.14159, 2.958, 1.871, 2.258, 1.763};

static int run(const char *command) {
    int status = system(command);
    if (status != 0) fprintf(stderr, "command failed (%d): %s\n", status, command);
    return status;
}

/* ---- what a picture shows ---- */

typedef struct seen_t {
    int shape, colour, place, size;
    double cx, cy, radius;
} seen_t;

static int channel_median(const uint8_t *rgb, size_t count, int c) {
    size_t histogram[256] = {0};
    for (size_t i = 0; i < count; ++i) histogram[rgb[i * 3 + c]] += 1;
    size_t seen = 0;
    for (int v = 0; v < 256; ++v)
        if ((seen += histogram[v]) * 2 >= count) return v;
    return 255;
}

/* Segments the one shape of an RGB picture from its grey background and describes it. Answers -1
 * when nothing stands out. */
static int look(const uint8_t *rgb, size_t width, size_t height, seen_t *seen) {
    size_t count = width * height;
    int background[3];
    for (int c = 0; c < 3; ++c) background[c] = channel_median(rgb, count, c);
    unsigned char *mask = calloc(count, 1);
    size_t area = 0, x0 = width, x1 = 0, y0 = height, y1 = 0;
    double sx = 0, sy = 0;
    for (size_t y = 0; y < height; ++y)
        for (size_t x = 0; x < width; ++x) {
            const uint8_t *p = rgb + (y * width + x) * 3;
            int difference = 0;
            for (int c = 0; c < 3; ++c) difference = abs(p[c] - background[c]) > difference ? abs(p[c] - background[c]) : difference;
            if (difference <= 40) continue;
            mask[y * width + x] = 1, area += 1, sx += (double)x + 0.5, sy += (double)y + 0.5;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y < y0) y0 = y;
            if (y > y1) y1 = y;
        }
    if (area < 10) return free(mask), -1;
    seen->cx = sx / (double)area, seen->cy = sy / (double)area;
    /* Colour: the mean of interior pixels (all four neighbours in the shape), away from the edge
     * that antialiasing and chroma subsampling blend with the background. */
    double mean[3] = {0, 0, 0};
    size_t interior = 0, top = 0;
    double middle = (double)(y0 + y1) / 2.0;
    for (size_t y = y0; y <= y1; ++y)
        for (size_t x = x0; x <= x1; ++x) {
            if (!mask[y * width + x]) continue;
            top += (double)y < middle;
            if (x == 0 || y == 0 || x + 1 >= width || y + 1 >= height) continue;
            if (!mask[y * width + x - 1] || !mask[y * width + x + 1] || !mask[(y - 1) * width + x] || !mask[(y + 1) * width + x])
                continue;
            for (int c = 0; c < 3; ++c) mean[c] += rgb[(y * width + x) * 3 + c];
            interior += 1;
        }
    if (interior == 0) return free(mask), -1;
    double best = INFINITY;
    for (int k = 0; k < 8; ++k) {
        double distance = 0;
        for (int c = 0; c < 3; ++c) distance += pow(mean[c] / (double)interior - palette[k][c], 2);
        if (distance < best) best = distance, seen->colour = k;
    }
    /* Shape: a square fills its box and a circle π/4 of it. A star, a triangle and a cross fill
     * about a third to a half; of them only the star leaves part of its centre column empty (below
     * the inner vertex between its lower points), and a triangle (point up) keeps most of itself
     * in its lower half where a cross is balanced. */
    size_t column_x = (size_t)seen->cx, column = 0;
    for (size_t y = y0; y <= y1; ++y) column += mask[y * width + column_x];
    double fill = (double)area / ((double)(x1 - x0 + 1) * (double)(y1 - y0 + 1)), upper = (double)top / (double)area;
    double filled_column = (double)column / (double)(y1 - y0 + 1);
    seen->shape = fill > 0.88 ? 1 : fill > 0.66 ? 0 : filled_column < 0.9 ? 4 : upper < 0.40 ? 2 : 3;
    free(mask);
    seen->radius = sqrt((double)area / shape_areas[seen->shape]);
    static const double anchors[5][2] = {{0.29, 0.5}, {0.71, 0.5}, {0.5, 0.29}, {0.5, 0.71}, {0.5, 0.5}};
    best = INFINITY;
    for (int k = 0; k < 5; ++k) {
        double distance = hypot(seen->cx / (double)width - anchors[k][0], seen->cy / (double)height - anchors[k][1]);
        if (distance < best) best = distance, seen->place = k;
    }
    seen->size = seen->radius / (double)width > 0.175; /* between small (≤ 0.15) and large (≥ 0.20) */
    return 0;
}

static int index_of(const char *const *names, int count, const char *name) {
    for (int i = 0; i < count; ++i)
        if (name && strcmp(names[i], name) == 0) return i;
    return -1;
}

static const char *field(const cJSON *line, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(line, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static size_t images_checked, clips_checked, recordings_checked;

static void check_picture(const cJSON *line, const char *path, const unsigned char *bytes, size_t size) {
    uform__media_image_t image = {0};
    uform_outcome_t outcome = {0};
    CHECK_MSG(uform__media_image_decode(bytes, size, NULL, &image, &outcome) == UFORM_OK, "%s: %s", path, outcome.message);
    if (!image.pixels) return;
    static const char *const places[5] = {"left", "right", "top", "bottom", "centre"};
    static const char *const sizes[2] = {"small", "large"};
    seen_t seen;
    CHECK_MSG(look(image.pixels, image.width, image.height, &seen) == 0, "%s: no shape found", path);
    int shape = index_of(shapes, 5, field(line, "shape")), colour = index_of(colours, 8, field(line, "colour"));
    int place = index_of(places, 5, field(line, "place")), size_index = index_of(sizes, 2, field(line, "size"));
    const char *text = field(line, "text");
    CHECK_MSG(seen.shape == shape, "%s (\"%s\"): the pixels show a %s", path, text, shapes[seen.shape]);
    CHECK_MSG(seen.colour == colour, "%s (\"%s\"): the pixels are %s", path, text, colours[seen.colour]);
    CHECK_MSG(seen.place == place, "%s (\"%s\"): the shape sits at the %s (%.1f, %.1f)", path, text, places[seen.place], seen.cx, seen.cy);
    CHECK_MSG(seen.size == size_index, "%s (\"%s\"): the shape is %s (radius %.2f)", path, text, sizes[seen.size], seen.radius);
    /* The caption names the attributes (a caption that disagreed with them would slip past above). */
    char caption[160];
    snprintf(caption, sizeof caption, "a %s %s %s %s %s", sizes[size_index], colours[colour], shapes[shape],
             place < 2 ? "on the" : place < 4 ? "at the" : "in the", places[place]);
    CHECK_MSG(text && strcmp(text, caption) == 0, "%s: caption \"%s\", attributes say \"%s\"", path, text, caption);
    images_checked += 1;
    uform__media_image_free(&image);
}

static void check_clip(const cJSON *line, const char *path, const unsigned char *bytes, size_t size) {
#if UFORM_WITH_FFMPEG
    uform__media_video_t video = {0};
    uform_outcome_t outcome = {0};
    CHECK_MSG(uform__media_video_decode(bytes, size, 8, NULL, &video, &outcome) == UFORM_OK, "%s: %s", path, outcome.message);
    if (!video.pixels) return;
    size_t frame = (size_t)video.width * video.height * 3;
    seen_t first, last;
    int found = look(video.pixels, video.width, video.height, &first) == 0 &&
                look(video.pixels + 7 * frame, video.width, video.height, &last) == 0;
    CHECK_MSG(found, "%s: no shape in the first or last frame", path);
    static const char *const motions[4] = {"left", "right", "up", "down"};
    double dx = found ? last.cx - first.cx : 0, dy = found ? last.cy - first.cy : 0;
    int motion = fabs(dx) > fabs(dy) ? (dx < 0 ? 0 : 1) : (dy < 0 ? 2 : 3);
    const char *text = field(line, "text");
    CHECK_MSG(found && motion == index_of(motions, 4, field(line, "motion")), "%s (\"%s\"): the shape moves %s (%.1f, %.1f)",
              path, text, motions[motion], dx, dy);
    CHECK_MSG(found && hypot(dx, dy) > 0.3 * video.width, "%s: the shape moves only %.1f pixels", path, hypot(dx, dy));
    CHECK_MSG(found && first.colour == index_of(colours, 8, field(line, "colour")), "%s (\"%s\"): the pixels are %s", path,
              text, colours[first.colour]);
    CHECK_MSG(found && first.shape == index_of(shapes, 5, field(line, "shape")), "%s (\"%s\"): the pixels show a %s", path,
              text, shapes[first.shape]);
    clips_checked += 1;
    uform__media_video_free(&video);
#else
    (void)line, (void)path, (void)bytes, (void)size;
#endif
}

static void check_recording(const cJSON *line, const char *path, const unsigned char *bytes, size_t size) {
    uform__media_audio_t audio = {0};
    uform_outcome_t outcome = {0};
    CHECK_MSG(uform__media_audio_decode(bytes, size, 0, NULL, &audio, &outcome) == UFORM_OK, "%s: %s", path, outcome.message);
    if (!audio.samples) return;
    double seconds = (double)audio.count / audio.rate;
    CHECK_MSG(audio.rate == 16000 && fabs(seconds - 2.0) < 0.01, "%s: %zu samples at %u Hz (%.3f s), expected 2 s at 16000 Hz",
              path, audio.count, audio.rate, seconds);
    /* Loudness in 10 ms windows: speech stands far above the noise floor (σ ≈ 0.0012). */
    size_t window = audio.rate / 100, windows = audio.count / window, first = SIZE_MAX, last = 0;
    double loudest = 0, quietest = INFINITY;
    for (size_t w = 0; w < windows; ++w) {
        double energy = 0;
        for (size_t i = w * window; i < (w + 1) * window; ++i) energy += (double)audio.samples[i] * audio.samples[i];
        double rms = sqrt(energy / (double)window);
        if (rms > loudest) loudest = rms;
        if (rms < quietest) quietest = rms;
        if (rms > 0.01) {
            if (first == SIZE_MAX) first = w;
            last = w;
        }
    }
    double span = first == SIZE_MAX ? 0 : (double)(last - first + 1) / 100.0;
    const cJSON *spoken = cJSON_GetObjectItemCaseSensitive(line, "spoken_seconds");
    double reported = cJSON_IsNumber(spoken) ? spoken->valuedouble : -1;
    CHECK_MSG(loudest > 0.03, "%s: the loudest 10 ms has RMS %.4f: silent", path, loudest);
    CHECK_MSG(span >= 0.5 && span <= 1.9, "%s: speech spans %.2f s (expected 0.5-1.9 s)", path, span);
    CHECK_MSG(fabs(span - reported) < 0.3, "%s: speech spans %.2f s, espeak-ng reported %.2f s", path, span, reported);
    /* Between words and around the speech: faint noise, not digital silence. */
    CHECK_MSG(quietest > 0.0003 && quietest < 0.005, "%s: the quietest 10 ms has RMS %.5f (expected faint noise)", path, quietest);
    recordings_checked += 1;
    uform__media_audio_free(&audio);
}

/* Reads DIR/NAME.jsonl; for each line, compares its file with the same path under the other folders
 * and checks what it shows. Answers the lines read. */
static size_t check_manifest(const char *dir, const char *name, const char *same, const char *other, size_t *differing,
                             size_t *compared) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, name);
    size_t size = 0, lines = 0;
    unsigned char *manifest = test_read_file(path, &size);
    CHECK_MSG(manifest != NULL, "cannot read %s", path);
    if (!manifest) return 0;
    size_t other_size = 0, same_size = 0;
    snprintf(path, sizeof path, "%s/%s.jsonl", same, name);
    unsigned char *same_manifest = test_read_file(path, &same_size);
    CHECK_MSG(same_manifest && same_size == size && memcmp(manifest, same_manifest, size) == 0,
              "%s.jsonl differs between two runs with the same seed", name);
    free(same_manifest);
    char *text = realloc(manifest, size + 1);
    text[size] = 0;
    for (char *at = text, *end; at && *at; at = end) {
        end = strchr(at, '\n');
        if (end) *end++ = 0;
        cJSON *line = cJSON_Parse(at);
        CHECK_MSG(cJSON_IsObject(line), "%s.jsonl: a line is not a JSON object: %s", name, at);
        const char *kinds[3] = {"image", "video", "audio"};
        for (int k = 0; line && k < 3; ++k) {
            const char *relative = field(line, kinds[k]);
            if (!relative) continue;
            char full[4096];
            snprintf(full, sizeof full, "%s/%s", dir, relative);
            size_t bytes_size = 0, again_size = 0;
            unsigned char *bytes = test_read_file(full, &bytes_size);
            CHECK_MSG(bytes && bytes_size > 0, "cannot read %s", full);
            snprintf(full, sizeof full, "%s/%s", same, relative);
            unsigned char *again = test_read_file(full, &again_size);
            CHECK_MSG(bytes && again && again_size == bytes_size && memcmp(bytes, again, bytes_size) == 0,
                      "%s differs between two runs with the same seed", relative);
            free(again);
            snprintf(full, sizeof full, "%s/%s", other, relative);
            unsigned char *different = test_read_file(full, &other_size);
            if (bytes && different) {
                *compared += 1;
                *differing += other_size != bytes_size || memcmp(bytes, different, bytes_size) != 0;
            }
            free(different);
            if (bytes && k == 0) check_picture(line, relative, bytes, bytes_size);
            if (bytes && k == 1) check_clip(line, relative, bytes, bytes_size);
            if (bytes && k == 2) check_recording(line, relative, bytes, bytes_size);
            free(bytes);
        }
        lines += line != NULL;
        cJSON_Delete(line);
    }
    free(text);
    return lines;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_synth UFORM_BINARY [PAIRS]\n");
        return 2;
    }
    int pairs = argc > 2 ? atoi(argv[2]) : 40; /* more for a longer look at the classifier */
    char work[] = "/tmp/uform_test_synth_XXXXXX";
    if (!mkdtemp(work)) return perror("mkdtemp"), 1;
    char command[20000], a[4200], b[4200], c[4200];
    snprintf(a, sizeof a, "%s/a", work), snprintf(b, sizeof b, "%s/b", work), snprintf(c, sizeof c, "%s/c", work);
    char flags[64];
    snprintf(flags, sizeof flags, "--pairs %d --heldout 24 --quiet", pairs);
    /* The two runs with one seed go at once, 3 threads each on whatever cores there are, so they
     * load each other (a recording once differed between runs under ctest -j2); both must finish. */
    snprintf(command, sizeof command,
             "'%s' synth '%s' --seed 5 --threads 3 %s & first=$!; '%s' synth '%s' --seed 5 --threads 3 %s; "
             "second=$?; wait $first && exit $second",
             argv[1], a, flags, argv[1], b, flags);
    CHECK(run(command) == 0);
    snprintf(command, sizeof command, "'%s' synth '%s' --seed 6 %s", argv[1], c, flags);
    CHECK(run(command) == 0);
    size_t differing = 0, compared = 0;
    size_t train = check_manifest(a, "train", b, c, &differing, &compared);
    size_t heldout = check_manifest(a, "heldout", b, c, &differing, &compared);
    size_t novel = check_manifest(a, "novel", b, c, &differing, &compared);
    CHECK_EQ_INT(train, 3 * (size_t)pairs);
    CHECK_EQ_INT(heldout, 3 * 24);
    CHECK_EQ_INT(novel, 24 + 20 + 24); /* of 50, 20 and 25 compositional captions */
    CHECK_MSG(compared > 0 && differing == compared, "%zu of %zu files differ between seeds 5 and 6", differing, compared);
    printf("checked %zu pictures, %zu clips, %zu recordings; %zu of %zu files differ between seeds\n", images_checked,
           clips_checked, recordings_checked, differing, compared);
    /* Usage errors exit 2 and name the problem. */
    snprintf(command, sizeof command, "'%s' synth '%s' --modalities smell 2>/dev/null", argv[1], a);
    CHECK(WEXITSTATUS(system(command)) == 2);
    snprintf(command, sizeof command, "'%s' synth 2>/dev/null", argv[1]);
    CHECK(WEXITSTATUS(system(command)) == 2);
    snprintf(command, sizeof command, "rm -rf '%s'", work);
    run(command);
    return check_finish();
}
