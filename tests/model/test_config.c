/*
 * The checkpoint config's limits (docs/model.md, "The config"): for every numeric field, the largest
 * value accepted and the first one refused, and the refusal names the field and the limit; the
 * normalisation a mean and std imply; a config printed and parsed again keeps every value (the
 * video's own mean and std included), also through a trainer that resumes and saves.
 *
 * Bounds that come from the size of the checkpoint the config implies (its tensors must end below
 * 2^53 bytes even as BF16) are computed here from docs/model.md's tensor table restated, not from
 * the library's own list. The parser is called directly; a few configs also go through
 * uform_model_load_ram in a file that holds only the metadata, where an accepted config must fail on
 * the first missing tensor — neither on memory nor on the config.
 * Usage: test_config SCRATCH_FOLDER
 */
#include <cJSON.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/layout.h"
#include "uform/uform.h"

static char work[512];

/* Four modalities at tiny's sizes, or text alone with every width at 1 ("narrow"). */
static const char *const tiny_json =
    "{\"format\": 4, \"hidden\": 128, \"depth\": 2, \"heads\": 2, \"mlp\": 512, \"embedding\": 64,"
    " \"modalities\": [\"text\", \"image\", \"video\", \"audio\"], \"text\": {\"bytes\": 64},"
    " \"image\": {\"size\": 32, \"patch\": 8}, \"video\": {\"size\": 32, \"patch\": 8, \"frames\": 4, \"tubelet\": 2},"
    " \"audio\": {\"rate\": 16000, \"seconds\": 1, \"mels\": 80}}";
static const char *const narrow_json =
    "{\"format\": 4, \"hidden\": 1, \"depth\": 1, \"heads\": 1, \"mlp\": 1, \"embedding\": 1,"
    " \"matryoshka\": [1], \"modalities\": [\"text\"], \"text\": {\"bytes\": 1}}";

/* ---- building configs ---- */

/* `base` with each "path=value" of `edits` set ("image.size=16384"; "video.mean=[1,2,3]" for an
 * array; a missing section is created). Answers malloc'ed JSON. */
static char *edited(const char *base, const char *const *edits, size_t count) {
    cJSON *root = cJSON_Parse(base);
    for (size_t i = 0; i < count; ++i) {
        char path[64];
        snprintf(path, sizeof path, "%s", edits[i]);
        char *value = strchr(path, '=');
        *value++ = 0;
        cJSON *parent = root;
        char *dot = strchr(path, '.'), *key = path;
        if (dot) {
            *dot = 0;
            parent = cJSON_GetObjectItemCaseSensitive(root, path);
            if (!parent) parent = cJSON_AddObjectToObject(root, path);
            key = dot + 1;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        cJSON_AddItemToObject(parent, key, cJSON_CreateRaw(value)); /* verbatim: cJSON prints 2^53 as 2^53 - 2 */
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return json;
}

static char *edited1(const char *base, const char *edit) { return edited(base, &edit, 1); }

static uform_status_t parse(const char *json, uform__model_config_t *config, uform_outcome_t *outcome) {
    memset(outcome, 0, sizeof *outcome);
    return uform__model_config_parse(json, config, outcome, "test");
}

/* `json` is accepted. */
static void accepts(const char *label, char *json) {
    uform__model_config_t config;
    uform_outcome_t outcome;
    uform_status_t status = parse(json, &config, &outcome);
    CHECK_MSG(status == UFORM_OK, "%s: refused (%s): %s", label, uform_status_name(status), outcome.message);
    free(json);
}

/* `json` is refused with `status` and a message holding each of the NULL-terminated `needles`. */
static void refuses(const char *label, char *json, uform_status_t expected, const char *needle, const char *limit) {
    uform__model_config_t config;
    uform_outcome_t outcome;
    uform_status_t status = parse(json, &config, &outcome);
    CHECK_MSG(status == expected, "%s: status %s, expected %s (%s)", label, uform_status_name(status),
              uform_status_name(expected), outcome.message);
    CHECK_MSG(strstr(outcome.message, needle) && (!limit || strstr(outcome.message, limit)),
              "%s: message \"%s\" should name \"%s\" and \"%s\"", label, outcome.message, needle, limit ? limit : "");
    free(json);
}

/* The field at `bound` is accepted and at `past` refused, naming the field and `limit`. */
static void walk(const char *base, const char *field, double bound, double past, const char *limit) {
    char edit[96], label[128];
    snprintf(edit, sizeof edit, "%s=%.17g", field, bound);
    snprintf(label, sizeof label, "%s at %.17g", field, bound);
    accepts(label, edited1(base, edit));
    snprintf(edit, sizeof edit, "%s=%.17g", field, past);
    snprintf(label, sizeof label, "%s at %.17g", field, past);
    char named[80];
    snprintf(named, sizeof named, "'%s' %.17g", field, past);
    refuses(label, edited1(base, edit), UFORM_FORMAT, named, limit);
}

/* ---- docs/model.md's tensor table, restated: elements of every tensor of a config ---- */

typedef struct sizes_t {
    double d, depth, mlp, embedding, groups, text_bytes; /* text only, as the narrow base */
} sizes_t;

/* Bytes as BF16 of a text-only model: per block norm1, norm2 (2d each), qkv (3d·d + 3d), out
 * (d·d + d), up (mlp·d + mlp), down (d·mlp + d); temperatures [G]; modality.text, text.norm (2d),
 * text.projection [E, d], text.bytes [260, d], text.positions [T + 2, d], choose.norm (2d),
 * choose.head [256, d] + [256]. Exact in long double for values below 2^53. */
static long double text_model_bytes(sizes_t s) {
    long double d = s.d, block = 2 * d + 3 * d * d + 3 * d + d * d + d + 2 * d + s.mlp * d + s.mlp + d * s.mlp + d;
    long double text = d + 2 * d + s.embedding * d + 260 * d + (s.text_bytes + 2) * d + 2 * d + 256 * d + 256;
    return 2 * (s.depth * block + s.groups + text);
}

#define DATA_LIMIT 9007199254740991.0L /* the largest end offset of a checkpoint's data */

/* The largest value of one size (through `set`) whose model still fits, by bisection. */
static double largest_fitting(sizes_t base, void (*set)(sizes_t *, double)) {
    double low = 1, high = 9007199254740992.0;
    while (high - low > 1) {
        double middle = floor((low + high) / 2);
        sizes_t s = base;
        set(&s, middle);
        if (text_model_bytes(s) <= DATA_LIMIT) low = middle;
        else high = middle;
    }
    return low;
}

static void set_d(sizes_t *s, double v) { s->d = v; }
static void set_mlp(sizes_t *s, double v) { s->mlp = v; }
static void set_embedding(sizes_t *s, double v) { s->embedding = v; }
static void set_groups(sizes_t *s, double v) { s->groups = v; }
static void set_text(sizes_t *s, double v) { s->text_bytes = v; }
static void set_depth(sizes_t *s, double v) { s->depth = v; }

/* A size bounded by the checkpoint's 2^53 bytes: `field` at the largest fitting value passes, one
 * more is refused with the byte limit, naming the largest tensor's keys (`shaped`). */
static void walk_bytes(const char *field, const char *json_field, void (*set)(sizes_t *, double), sizes_t base,
                       const char *other, const char *shaped) {
    double bound = largest_fitting(base, set);
    char edits[2][96], label[128];
    const char *list[2] = {edits[0], edits[1]};
    for (int past = 0; past < 2; ++past) {
        double value = bound + past;
        snprintf(edits[0], sizeof edits[0], "%s=%.17g", json_field, value);
        /* the heads follow the hidden width, so the head width stays 1 */
        snprintf(edits[1], sizeof edits[1], "%s=%.17g", other ? other : json_field, value);
        snprintf(label, sizeof label, "%s at %.17g (bytes)", field, value);
        if (!past) accepts(label, edited(narrow_json, list, 2));
        else refuses(label, edited(narrow_json, list, 2), UFORM_FORMAT, "past the 2^53 - 1 bytes", shaped);
    }
    printf("%s: largest %.17g (the model's tensors end below 2^53 bytes as BF16)\n", field, bound);
}

static void test_sizes(void) {
    sizes_t narrow = {1, 1, 1, 1, 1, 1};
    walk_bytes("hidden", "hidden", set_d, narrow, "heads", "3 x hidden x hidden");
    walk_bytes("mlp", "mlp", set_mlp, narrow, NULL, "mlp x hidden");
    walk_bytes("embedding", "embedding", set_embedding, narrow, NULL, "embedding x hidden");
    walk_bytes("temperature_groups", "temperature_groups", set_groups, narrow, NULL, "temperature_groups");
    walk_bytes("text.bytes", "text.bytes", set_text, narrow, NULL, "text.bytes x hidden");
    /* depth's own limit binds long before the bytes do */
    CHECK(largest_fitting(narrow, set_depth) > 131073);
    walk(narrow_json, "depth", 131072, 131073, "131072");
    walk(tiny_json, "depth", 131072, 131073, "100 MiB");
    /* Past what a JSON number holds exactly, before any byte count. */
    walk(narrow_json, "text.bytes", 1, 9007199254740990.0, "2^53 - 3");
    refuses("hidden 2^53", edited1(narrow_json, "hidden=9007199254740992"), UFORM_FORMAT, "'hidden' 9007199254740992",
            "2^53 - 1");
    refuses("mlp 1e300", edited1(narrow_json, "mlp=1e300"), UFORM_FORMAT, "'mlp'", "2^53 - 1");
    /* The smallest: 1 (0, negatives and fractions refused, naming the field). */
    static const char *const fields[] = {"hidden", "depth", "heads", "mlp", "embedding", "temperature_groups",
                                         "text.bytes", "image.size", "image.patch", "video.size", "video.patch",
                                         "video.frames", "video.tubelet", "audio.seconds", "audio.mels"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) {
        char edit[64], needle[64];
        snprintf(edit, sizeof edit, "%s=0", fields[i]);
        snprintf(needle, sizeof needle, "'%s' 0 is below 1", fields[i]);
        refuses(edit, edited1(tiny_json, edit), UFORM_FORMAT, needle, NULL);
        snprintf(edit, sizeof edit, "%s=2.5", fields[i]);
        snprintf(needle, sizeof needle, "'%s' 2.5 is not an integer", fields[i]);
        refuses(edit, edited1(tiny_json, edit), UFORM_FORMAT, needle, NULL);
        snprintf(edit, sizeof edit, "%s=\"8\"", fields[i]);
        snprintf(needle, sizeof needle, "'%s' must be an integer, not a string", fields[i]);
        refuses(edit, edited1(tiny_json, edit), UFORM_FORMAT, needle, NULL);
    }
}

static void test_heads(void) {
    /* heads up to hidden (a head 1 wide); the head width up to the attention kernels' 128 */
    walk(tiny_json, "heads", 128, 129, "exceeds hidden 128");
    const char *wide[2] = {"hidden=256", "heads=2"};
    accepts("head width 128", edited(tiny_json, wide, 2));
    wide[0] = "hidden=258";
    refuses("head width 129", edited(tiny_json, wide, 2), UFORM_UNSUPPORTED, "a head width of 129 (hidden 258 / heads 2)",
            "attention kernels' 128");
    refuses("heads not dividing", edited1(tiny_json, "heads=3"), UFORM_FORMAT, "hidden 128 is not a multiple of heads 3",
            NULL);
    /* The case: answered for the head width, with the real numbers. */
    refuses("hidden 1e9", edited1(tiny_json, "hidden=1000000000"), UFORM_UNSUPPORTED,
            "a head width of 500000000 (hidden 1000000000 / heads 2)", "128");
}

static void test_media(void) {
    const char *picture = "16384, the largest side of a picture";
    const char *big_image[2] = {"image.size=16384", "image.patch=16384"};
    accepts("image 16384/16384", edited(tiny_json, big_image, 2));
    walk(tiny_json, "image.size", 16384, 16385, picture);
    refuses("image.size 2^31", edited1(tiny_json, "image.size=2147483648"), UFORM_FORMAT, "'image.size' 2147483648",
            picture);
    const char *patch[2] = {"image.size=16384", "image.patch=16385"};
    accepts("image.patch 16384", edited(tiny_json, big_image, 2));
    refuses("image.patch 16385", edited(tiny_json, patch, 2), UFORM_FORMAT, "'image.patch' 16385", picture);
    refuses("image.patch not dividing", edited1(tiny_json, "image.patch=7"), UFORM_FORMAT,
            "image.size 32 is not a multiple of image.patch 7", NULL);
    /* video: sides as images; frames up to 1,024; frames x side^2 up to 2^30 */
    const char *video[3] = {"video.size=16384", "video.patch=16384", "video.frames=4"};
    accepts("video 4 x 16384^2", edited(tiny_json, video, 3));
    walk(tiny_json, "video.size", 32, 16385, picture);
    const char *video_patch[2] = {"video.size=16384", "video.patch=16385"};
    refuses("video.patch 16385", edited(tiny_json, video_patch, 2), UFORM_FORMAT, "'video.patch' 16385", picture);
    const char *frames[2] = {"video.frames=1024", "video.tubelet=1024"};
    accepts("video.frames and tubelet 1024", edited(tiny_json, frames, 2));
    walk(tiny_json, "video.frames", 1024, 1025, "1024, the most frames");
    const char *tubelet[2] = {"video.frames=1024", "video.tubelet=1025"};
    refuses("video.tubelet 1025", edited(tiny_json, tubelet, 2), UFORM_FORMAT, "'video.tubelet' 1025", "1024");
    const char *pixels[4] = {"video.size=16384", "video.patch=16384", "video.frames=5", "video.tubelet=1"};
    refuses("video 5 x 16384^2", edited(tiny_json, pixels, 4), UFORM_FORMAT, "video.frames 5 x video.size 16384^2",
            "2^30 of a decoded video");
    refuses("frames not dividing", edited1(tiny_json, "video.tubelet=3"), UFORM_FORMAT,
            "video.frames 4 is not a multiple of video.tubelet 3", NULL);
    /* audio */
    walk(tiny_json, "audio.rate", 768000, 768001, "768000 Hz");
    accepts("audio.rate 800", edited1(tiny_json, "audio.rate=800"));
    refuses("audio.rate 799", edited1(tiny_json, "audio.rate=799"), UFORM_FORMAT, "'audio.rate' 799 is below 800 Hz", NULL);
    walk(tiny_json, "audio.seconds", 3600, 3601, "one hour");
    walk(tiny_json, "audio.mels", 65536, 65537, "65536");
}

static void test_other_fields(void) {
    /* matryoshka: 1 to 8 entries, each 1 … embedding */
    accepts("matryoshka of 8", edited1(tiny_json, "matryoshka=[1,2,4,8,16,32,48,64]"));
    refuses("matryoshka of 9", edited1(tiny_json, "matryoshka=[1,2,4,8,16,32,48,56,64]"), UFORM_FORMAT, "'matryoshka'",
            "1 to 8");
    accepts("matryoshka at E", edited1(tiny_json, "matryoshka=[64]"));
    refuses("matryoshka past E", edited1(tiny_json, "matryoshka=[16,65]"), UFORM_FORMAT, "'matryoshka[1]' 65",
            "embedding 64");
    refuses("matryoshka 0", edited1(tiny_json, "matryoshka=[0]"), UFORM_FORMAT, "'matryoshka[0]' 0 is below 1", NULL);
    refuses("matryoshka empty", edited1(tiny_json, "matryoshka=[]"), UFORM_FORMAT, "'matryoshka'", "1 to 8");
    /* norm_eps: (0, 1], positive as the F32 the norms use */
    char edit[64];
    accepts("norm_eps 1", edited1(tiny_json, "norm_eps=1"));
    snprintf(edit, sizeof edit, "norm_eps=%.17g", nextafter(1.0, 2.0));
    refuses("norm_eps past 1", edited1(tiny_json, edit), UFORM_FORMAT, "'norm_eps'", "(0, 1]");
    snprintf(edit, sizeof edit, "norm_eps=%.17g", nextafter(ldexp(1.0, -150), 1.0));
    accepts("norm_eps just above 2^-150", edited1(tiny_json, edit));
    snprintf(edit, sizeof edit, "norm_eps=%.17g", ldexp(1.0, -150));
    refuses("norm_eps 2^-150 (0 as F32)", edited1(tiny_json, edit), UFORM_FORMAT, "'norm_eps'", "positive as F32");
    refuses("norm_eps 0", edited1(tiny_json, "norm_eps=0"), UFORM_FORMAT, "'norm_eps'", "(0, 1]");
    /* format */
    refuses("format 5", edited1(tiny_json, "format=5"), UFORM_UNSUPPORTED, "format 5", "(4)");
    refuses("format 3", edited1(tiny_json, "format=3"), UFORM_FORMAT, "format 3 is not 4", NULL);
}

/* The smallest positive F32 s with 1 / s finite: below it (x − mean) / std overflows for x = 1. */
static float smallest_std(void) {
    uint32_t low = 1, high = 0x3f800000u; /* the bit patterns of positive floats are ordered */
    while (high - low > 1) {
        uint32_t middle = low + (high - low) / 2;
        float s;
        memcpy(&s, &middle, sizeof s);
        volatile float quotient = 1.0f / s;
        if (isfinite(quotient)) high = middle;
        else low = middle;
    }
    float s;
    memcpy(&s, &high, sizeof s);
    return s;
}

static void test_normalisation(void) {
    char edit[128];
    const char *sections[2] = {"image", "video"};
    for (int k = 0; k < 2; ++k) {
        const char *m = sections[k];
        snprintf(edit, sizeof edit, "%s.std=[0.26, 0, 0.27]", m);
        char needle[64];
        snprintf(needle, sizeof needle, "'%s.std[1]' 0", m);
        refuses(edit, edited1(tiny_json, edit), UFORM_FORMAT, needle, "divide by zero");
        float s = smallest_std(), below = nextafterf(s, 0.0f);
        const char *pair[2] = {edit, NULL};
        char mean[64];
        snprintf(mean, sizeof mean, "%s.mean=[0, 0, 0]", m);
        pair[1] = mean;
        snprintf(edit, sizeof edit, "%s.std=[1, 1, %.17g]", m, (double)s);
        accepts(edit, edited(tiny_json, pair, 2));
        snprintf(edit, sizeof edit, "%s.std=[1, 1, %.17g]", m, (double)below);
        snprintf(needle, sizeof needle, "'%s.std[2]'", m);
        refuses(edit, edited(tiny_json, pair, 2), UFORM_FORMAT, needle, "overflow");
        /* a mean at F32's largest is accepted with std 1; one that is infinite as F32 is not */
        snprintf(edit, sizeof edit, "%s.mean=[%.17g, 0, 0]", m, (double)FLT_MAX);
        char ones[64];
        snprintf(ones, sizeof ones, "%s.std=[1, 1, 1]", m);
        const char *largest[2] = {edit, ones};
        accepts(edit, edited(tiny_json, largest, 2));
        snprintf(edit, sizeof edit, "%s.mean=[1e39, 0, 0]", m);
        snprintf(needle, sizeof needle, "'%s.mean[0]' inf", m);
        refuses(edit, edited1(tiny_json, edit), UFORM_FORMAT, needle, "overflow");
        snprintf(edit, sizeof edit, "%s.std=[1, -0.5, 1]", m); /* a negative std only flips the sign */
        accepts(edit, edited1(tiny_json, edit));
    }
    printf("std: smallest %.9g (1 / std finite in F32)\n", (double)smallest_std());
}

/* Printed and parsed again, a config is the same config: the video's own mean and std included. */
static void test_round_trip(void) {
    const char *edits[3] = {"video.mean=[0.5, 0.25, 0.125]", "video.std=[0.2, 0.3, 0.4]", "image.mean=[0.1, 0.2, 0.3]"};
    char *json = edited(tiny_json, edits, 3);
    uform__model_config_t config, again;
    uform_outcome_t outcome;
    CHECK_STATUS(parse(json, &config, &outcome), UFORM_OK);
    char *printed = uform__model_config_print(&config);
    CHECK_STATUS(parse(printed, &again, &outcome), UFORM_OK);
    CHECK(memcmp(&config, &again, sizeof config) == 0);
    CHECK(again.video_mean[0] == 0.5f && again.video_std[2] == 0.4f && again.image_mean[2] == 0.3f);
    char *twice = uform__model_config_print(&again);
    CHECK_MSG(strcmp(printed, twice) == 0, "printing is not stable: %s / %s", printed, twice);
    free(json), free(printed), free(twice);
    /* Without the video's own values the printed text has none either (fingerprints stay). */
    CHECK_STATUS(parse(tiny_json, &config, &outcome), UFORM_OK);
    printed = uform__model_config_print(&config);
    CHECK_MSG(strstr(printed, "\"video\":{") && !strstr(strstr(printed, "\"video\":{"), "mean"), "%s", printed);
    free(printed);

    /* Through a trainer: a checkpoint whose video differs from its image, resumed and saved. */
    json = edited(tiny_json, edits, 2);
    CHECK_STATUS(parse(json, &config, &outcome), UFORM_OK);
    free(json);
    char path[600], saved[600];
    snprintf(path, sizeof path, "%s/video_values.safetensors", work);
    snprintf(saved, sizeof saved, "%s/video_values_saved.safetensors", work);
    CHECK_STATUS(uform__model_write_random(path, &config, 3, &outcome, "test"), UFORM_OK);
    uform_trainer_config_t trainer_config = {0};
    trainer_config.resume = path;
    uform_trainer_t trainer = NULL;
    CHECK_STATUS(uform_trainer_init_ram(NULL, &trainer_config, &trainer, &outcome), UFORM_OK);
    uform_trainer_save_t save = {0};
    save.trainer = trainer, save.path = saved;
    CHECK_STATUS(uform_trainer_save(&save), UFORM_OK);
    uform_trainer_free(trainer);
    uform__safetensors_t *file = NULL;
    CHECK_STATUS(uform__safetensors_open(saved, &file, NULL), UFORM_OK);
    if (file) {
        CHECK_STATUS(parse(uform__safetensors_metadata_find(file, "uform.config"), &again, &outcome), UFORM_OK);
        CHECK_MSG(memcmp(again.video_mean, config.video_mean, sizeof config.video_mean) == 0 &&
                      memcmp(again.video_std, config.video_std, sizeof config.video_std) == 0,
                  "the resumed trainer saved video.mean %g %g %g, std %g %g %g", again.video_mean[0], again.video_mean[1],
                  again.video_mean[2], again.video_std[0], again.video_std[1], again.video_std[2]);
        uform__safetensors_close(file);
    }
    unlink(path), unlink(saved);
}

/* Through the loader, on files holding only the metadata. */
static void load_only_config(const char *label, char *json, uform_status_t expected, const char *needle) {
    char path[600];
    snprintf(path, sizeof path, "%s/config_only.safetensors", work);
    uform__safetensors_pair_t metadata[2] = {{"uform.format", "4"}, {"uform.config", json}};
    uform__safetensors_write_t request = {NULL, 0, metadata, 2, NULL, NULL};
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform__safetensors_write(path, &request, &outcome), UFORM_OK);
    uform_model_t model = NULL;
    memset(&outcome, 0, sizeof outcome);
    CHECK_STATUS(uform_model_load_ram(NULL, path, NULL, &model, &outcome), expected);
    CHECK_MSG(strstr(outcome.message, needle), "%s: \"%s\" should contain \"%s\"", label, outcome.message, needle);
    uform_model_free(model);
    unlink(path);
    free(json);
}

static void test_loader(void) {
    load_only_config("hidden 1e9", edited1(tiny_json, "hidden=1000000000"), UFORM_UNSUPPORTED,
                     "uform.config: a head width of 500000000 (hidden 1000000000 / heads 2) exceeds");
    load_only_config("image.size 2^31", edited1(tiny_json, "image.size=2147483648"), UFORM_FORMAT,
                     "'image.size' 2147483648 exceeds 16384");
    load_only_config("image.std 0", edited1(tiny_json, "image.std=[0.26, 0, 0.27]"), UFORM_FORMAT, "'image.std[1]' 0");
    /* Accepted at their bounds: the load goes on to the tensors and stops at the first missing one. */
    const char *bounds[] = {"depth=131072", "image.size=16384", "video.frames=1024", "audio.seconds=3600",
                            "audio.rate=768000", "audio.mels=65536"};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; ++i) {
        const char *edits[3] = {bounds[i], "video.tubelet=1", "video.size=32"};
        load_only_config(bounds[i], edited(tiny_json, edits, 3), UFORM_FORMAT, "tensor 'trunk.0.norm1.weight' [128] is missing");
    }
}

int main(int argc, char **argv) {
    snprintf(work, sizeof work, "%s", argc > 1 ? argv[1] : ".");
    test_sizes();
    test_heads();
    test_media();
    test_other_fields();
    test_normalisation();
    test_round_trip();
    test_loader();
    return check_finish();
}
