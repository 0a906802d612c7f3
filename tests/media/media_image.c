/*
 * Every image fixture decodes to the expected size and colours: quadrant colours from the
 * generator's definition (media_fixtures.h) with orientation, alpha over white, 16-bit and palette
 * applied by hand, and the whole image against PIL's decode (pil_reference.py).
 */
#include <stdint.h>

#include "common/check.h"
#include "media/media.h"
#include "media/common.h"
#include "media_fixtures.h"

/* Which source quadrant each output quadrant (TL, TR, BL, BR) shows for EXIF orientation 1–8,
 * from the EXIF specification's description of each value (0th row / 0th column). */
static const int orientation_quadrants[9][4] = {
    {0, 1, 2, 3}, {0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}, {2, 3, 0, 1},
    {0, 2, 1, 3}, {2, 0, 3, 1}, {3, 1, 2, 0}, {1, 3, 0, 2},
};

enum expectation { COLOURS, GREY_LUMA, OVER_WHITE, GREY_LEVELS, GREY_OVER_WHITE, KEYED };

typedef struct image_case_t {
    const char *name;
    int orientation;
    enum expectation expect;
    int tolerance;     /* per channel, against the quadrant colour at quadrant centres */
    int pil_tolerance; /* per channel, against PIL over the whole image; -1 skips */
    int ffmpeg;        /* decoded through libavcodec */
    int libjpeg;       /* written through libjpeg's API, only when the build found it */
} image_case_t;

static const image_case_t cases[] = {
    {"baseline.jpg", 1, COLOURS, 6, 0, 0},
    {"progressive.jpg", 1, COLOURS, 6, 0, 0},
    {"grey.jpg", 1, GREY_LUMA, 3, 0, 0},
    {"cmyk.jpg", 1, COLOURS, 6, 1, 0},
    /* No Adobe segment: the stored values are ink amounts. PIL inverts every CMYK JPEG ("assume adobe
     * conventions" in its JpegImagePlugin), so it is no reference here; the quadrant colours are. */
    {"cmyk_plain.jpg", 1, COLOURS, 6, -1, 0, 1},
    {"exif2.jpg", 2, COLOURS, 6, 0, 0},
    {"exif3.jpg", 3, COLOURS, 6, 0, 0},
    {"exif4.jpg", 4, COLOURS, 6, 0, 0},
    {"exif5.jpg", 5, COLOURS, 6, 0, 0},
    {"exif6.jpg", 6, COLOURS, 6, 0, 0},
    {"exif7.jpg", 7, COLOURS, 6, 0, 0},
    {"exif8.jpg", 8, COLOURS, 6, 0, 0},
    {"exif6_motorola.jpg", 6, COLOURS, 6, 0, 0},
    {"rgb8.png", 1, COLOURS, 0, 0, 0},
    {"rgb16.png", 1, COLOURS, 0, 0, 0},
    {"rgba.png", 1, OVER_WHITE, 0, 0, 0},
    {"rgb_key.png", 1, KEYED, 0, 0, 0},
    {"grey.png", 1, GREY_LEVELS, 0, 0, 0},
    {"grey_alpha.png", 1, GREY_OVER_WHITE, 0, 0, 0},
    {"palette.png", 1, COLOURS, 0, 0, 0},
    {"palette_trns.png", 1, OVER_WHITE, 0, 0, 0},
    {"lossy.webp", 1, COLOURS, 12, 0, 0},
    {"lossless_alpha.webp", 1, OVER_WHITE, 0, 0, 0},
    {"quadrants.bmp", 1, COLOURS, 0, 0, 1},
    {"quadrants.gif", 1, COLOURS, 0, 0, 1},
};

static uint8_t over_white(uint8_t colour, uint8_t alpha) {
    /* Written as the real-valued blend rounded, independently of the decoder's integer form. */
    return (uint8_t)lround((colour * (double)alpha + 255.0 * (255 - alpha)) / 255.0);
}

static void expected_colour(const image_case_t *c, int quadrant, uint8_t out[3]) {
    const uint8_t *rgb = media_fixture_quadrants[quadrant];
    uint8_t alpha = media_fixture_alpha[quadrant], grey = media_fixture_grey[quadrant];
    for (int k = 0; k < 3; ++k) {
        switch (c->expect) {
        case COLOURS: out[k] = rgb[k]; break;
        case GREY_LUMA: out[k] = (uint8_t)lround(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]); break; /* JFIF luma */
        case OVER_WHITE: out[k] = over_white(rgb[k], alpha); break;
        case GREY_LEVELS: out[k] = grey; break;
        case GREY_OVER_WHITE: out[k] = over_white(grey, alpha); break;
        case KEYED: out[k] = quadrant == 1 ? 255 : rgb[k]; break; /* the tRNS key colour becomes white */
        }
    }
}

/* Compares against PIL's pixels, written by pil_reference.py as "W H\n" + RGB8. */
static void check_against_pil(const image_case_t *c, const uform__media_image_t *image) {
    char name[256];
    snprintf(name, sizeof name, "%s.pil", c->name);
    size_t size = 0;
    uint8_t *reference = media_read(name, &size);
    CHECK_MSG(reference != NULL, "%s: no PIL reference", c->name);
    if (!reference) return;
    unsigned width = 0, height = 0;
    int header = 0;
    sscanf((const char *)reference, "%u %u\n%n", &width, &height, &header);
    CHECK_EQ_INT(width, image->width);
    CHECK_EQ_INT(height, image->height);
    if (width == image->width && height == image->height && size == (size_t)header + (size_t)width * height * 3) {
        int worst = 0;
        size_t worst_at = 0;
        for (size_t i = 0; i < (size_t)width * height * 3; ++i) {
            int difference = abs((int)image->pixels[i] - (int)reference[header + i]);
            if (difference > worst) worst = difference, worst_at = i;
        }
        CHECK_MSG(worst <= c->pil_tolerance, "%s: differs from PIL by %d at byte %zu (pixel %zu, ours %d, PIL %d), tolerance %d", c->name,
                  worst, worst_at, worst_at / 3, image->pixels[worst_at], reference[header + worst_at], c->pil_tolerance);
    } else {
        CHECK_MSG(0, "%s: PIL reference has %zu bytes", c->name, size);
    }
    free(reference);
}

static void check_case(const image_case_t *c) {
#if !UFORM_WITH_FFMPEG
    if (c->ffmpeg) return;
#endif
#if !MEDIA_FIXTURES_LIBJPEG
    if (c->libjpeg) return;
#endif
    size_t size = 0;
    uint8_t *bytes = media_read(c->name, &size);
    CHECK_MSG(bytes != NULL, "%s missing", c->name);
    if (!bytes) return;
    uform__media_image_t image;
    uform_outcome_t outcome = {0};
    uform_status_t status = uform__media_image_decode(bytes, size, NULL, &image, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: status %s: %s", c->name, uform_status_name(status), outcome.message);
    if (status == UFORM_OK) {
        int transposed = c->orientation >= 5;
        CHECK_EQ_INT(image.width, transposed ? MEDIA_FIXTURE_HEIGHT : MEDIA_FIXTURE_WIDTH);
        CHECK_EQ_INT(image.height, transposed ? MEDIA_FIXTURE_WIDTH : MEDIA_FIXTURE_HEIGHT);
        for (int q = 0; q < 4; ++q) {
            uint32_t x = (q & 1) ? image.width * 3 / 4 : image.width / 4, y = (q & 2) ? image.height * 3 / 4 : image.height / 4;
            uint8_t expected[3];
            expected_colour(c, orientation_quadrants[c->orientation][q], expected);
            const uint8_t *got = image.pixels + ((size_t)y * image.width + x) * 3;
            int ok = 1;
            for (int k = 0; k < 3; ++k) ok &= abs((int)got[k] - (int)expected[k]) <= c->tolerance;
            CHECK_MSG(ok, "%s quadrant %d at (%u, %u): got %d %d %d, expected %d %d %d (tolerance %d)", c->name, q, x, y, got[0], got[1],
                      got[2], expected[0], expected[1], expected[2], c->tolerance);
        }
        if (c->pil_tolerance >= 0) check_against_pil(c, &image);
    }
    uform__media_image_free(&image);
    uform__media_image_free(&image); /* freeing twice is a no-op */
    free(bytes);
}

int main(int argc, char **argv) {
    if (argc > 1) media_dir = argv[1];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) check_case(&cases[i]);

    /* The caller's pixel limit applies to valid files too. */
    size_t size = 0;
    uint8_t *bytes = media_read("rgb8.png", &size);
    if (bytes) {
        uform__media_limits_t limits = {.max_pixels = 1000};
        uform__media_image_t image;
        uform_outcome_t outcome = {0};
        CHECK_STATUS(uform__media_image_decode(bytes, size, &limits, &image, &outcome), UFORM_FORMAT);
        CHECK_CONTAINS(outcome.message, "64 x 48 pixels exceed the limit of 1000 pixels (max_pixels)");
        CHECK(image.pixels == NULL);
        free(bytes);
    }
#if !UFORM_WITH_FFMPEG
    /* GIF and BMP go through libavcodec: a build without FFmpeg says so. */
    static const uint8_t gif[] = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
    uform__media_image_t none;
    uform_outcome_t why = {0};
    CHECK_STATUS(uform__media_image_decode(gif, sizeof gif, NULL, &none, &why), UFORM_UNSUPPORTED);
    CHECK_CONTAINS(why.message, "GIF image: decoded through FFmpeg, and this build has none");
#endif
    return check_finish();
}
