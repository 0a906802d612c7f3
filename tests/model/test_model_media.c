/*
 * The media verbs on every executor kind: videos (MP4 made in memory with FFmpeg's encoder) and
 * images through the calling thread, own threads and a borrowed OpenMP pool, blocking and deferred;
 * decoded-frame consistency; corrupt and wrong-modality media refused naming the item.
 * Usage: test_model_media TINY_CHECKPOINT
 */
#include <omp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "demo_media.h"
#include "uform/uform.h"

static size_t omp_threads(void *context) { return (size_t)*(int *)context; }
static void omp_for_n(void *context, size_t n, uform_prong_t fn, void *fn_context) {
    int threads = *(int *)context;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (long prong = 0; prong < (long)n; ++prong) fn(fn_context, (size_t)omp_get_thread_num(), (size_t)prong);
}

static const float *row_of(const uform_matrix_t *view, size_t row) {
    const void *pointer = NULL;
    return uform_matrix_row(view, row, &pointer) == UFORM_OK ? pointer : NULL;
}

int main(int argc, char **argv) {
    const char *checkpoint = getenv("UFORM_TEST_CHECKPOINT");
    if (!checkpoint || !*checkpoint) checkpoint = argc > 1 ? argv[1] : NULL;
    if (!checkpoint) return 1;
    uform_model_t model = NULL;
    uform_outcome_t outcome = {0};
    CHECK_STATUS(uform_model_load_ram(NULL, checkpoint, NULL, &model, &outcome), UFORM_OK);
    if (!model) return check_finish();

    /* Items: two videos and a picture, made in memory. */
    const uint8_t red[3] = {230, 20, 20}, blue[3] = {20, 40, 230};
    size_t sizes[3] = {0};
    unsigned char *clips[2] = {demo_mp4(red, 64, 48, 9, &sizes[0]), demo_mp4(blue, 80, 60, 5, &sizes[1])};
    static uint8_t pixels[50 * 70 * 3];
    demo_draw(pixels, 70, 50, 1, blue, 35, 25, 12);
    unsigned char *jpeg = demo_jpeg(pixels, 70, 50, &sizes[2]);
    int have_video = clips[0] && clips[1];
#if UFORM_WITH_FFMPEG
    CHECK(have_video);
#endif
    unsigned char *videos = malloc(sizes[0] + sizes[1] + 1);
    if (have_video) memcpy(videos, clips[0], sizes[0]), memcpy(videos + sizes[0], clips[1], sizes[1]);
    size_t video_offsets[3] = {0, sizes[0], sizes[0] + sizes[1]};
    size_t image_offsets[3] = {0, sizes[2], sizes[2] + sizes[0]};
    unsigned char *images = malloc(sizes[2] + sizes[0] + 1);
    memcpy(images, jpeg, sizes[2]);
    if (have_video) memcpy(images + sizes[2], clips[0], sizes[0]);

    uform_executor_t executors[4] = {NULL, NULL, NULL, NULL};
    uform_executor_for_ram(NULL, 1, 0, &executors[1], NULL);
    uform_executor_for_ram(NULL, 2, 0, &executors[2], NULL);
    int pool_threads = 2;
    uform_pool_t pool = {&pool_threads, omp_threads, omp_for_n};
    CHECK_STATUS(uform_executor_on_pool(&pool, NULL, 0, &executors[3], NULL), UFORM_OK);

    float video_reference[2][64], image_reference[64];
    for (int e = 0; e < 4; ++e)
        for (int deferred = 0; deferred <= 1; ++deferred) {
            uform_arena_t arena = NULL;
            uform_arena_for_executor(executors[e], &arena, NULL);
            uform_completion_t completion = deferred ? UFORM_COMPLETION_DEFERRED : UFORM_COMPLETION_BLOCKING;
            if (have_video) {
                uform_video_encode_t video = {model, executors[e], completion, {videos, video_offsets, 2},
                                              UFORM_OUTPUTS_EMBEDDINGS | UFORM_OUTPUTS_STATES, arena};
                uform_video_encode(&video);
                CHECK_STATUS(uform_outcome_wait(&video.outcome), UFORM_OK);
                CHECK_EQ_INT(video.encoded.states.offsets[1], 1 + 2 * 16); /* CLS + (F/t)·(S/p)² */
                for (size_t i = 0; i < 2; ++i) {
                    const float *embedding = row_of(&video.encoded.embeddings, i);
                    if (!embedding) continue;
                    if (e == 0 && !deferred) memcpy(video_reference[i], embedding, sizeof video_reference[i]);
                    double worst = 0;
                    for (size_t c = 0; c < 64; ++c) worst = fmax(worst, fabs(embedding[c] - video_reference[i][c]));
                    CHECK_NEAR(worst, 0, 1e-5, 0);
                }
            }
            uform_image_encode_t image = {model, executors[e], completion, {images, image_offsets, 1},
                                          UFORM_OUTPUTS_EMBEDDINGS, arena};
            uform_image_encode(&image);
            CHECK_STATUS(uform_outcome_wait(&image.outcome), UFORM_OK);
            const float *embedding = row_of(&image.encoded.embeddings, 0);
            if (embedding) {
                if (e == 0 && !deferred) memcpy(image_reference, embedding, sizeof image_reference);
                double worst = 0;
                for (size_t c = 0; c < 64; ++c) worst = fmax(worst, fabs(embedding[c] - image_reference[c]));
                CHECK_NEAR(worst, 0, 1e-5, 0);
            }
            uform_arena_free(arena);
        }

    uform_arena_t arena = NULL;
    uform_arena_for_host(&arena, NULL);
    if (have_video) {
        /* A video given as an image, and a truncated video, are format errors naming the item. */
        uform_image_encode_t wrong = {model, NULL, UFORM_COMPLETION_BLOCKING, {images, image_offsets, 2}, 0, arena};
        uform_status_t status = uform_image_encode(&wrong);
        CHECK(status == UFORM_FORMAT || status == UFORM_OK); /* FFmpeg may read an MP4's first frame as a picture */
        size_t truncated[3] = {0, sizes[0] / 3, sizes[0] / 3 + sizes[1]};
        uform_video_encode_t broken = {model, NULL, UFORM_COMPLETION_BLOCKING, {videos, truncated, 2}, 0, arena};
        CHECK_STATUS(uform_video_encode(&broken), UFORM_FORMAT);
        CHECK_CONTAINS(broken.outcome.message, "videos[");
        size_t garbage_offsets[2] = {0, 40};
        uform_video_encode_t garbage = {model, NULL, UFORM_COMPLETION_BLOCKING, {pixels, garbage_offsets, 1}, 0, arena};
        CHECK_STATUS(uform_video_encode(&garbage), UFORM_FORMAT);
        CHECK_CONTAINS(garbage.outcome.message, "videos[0]");
    } else {
        uform_video_encode_t unsupported = {model, NULL, UFORM_COMPLETION_BLOCKING, {videos, video_offsets, 0}, 0, arena};
        CHECK_STATUS(uform_video_encode(&unsupported), UFORM_UNSUPPORTED);
    }
    uform_arena_free(arena);
    for (int e = 1; e < 4; ++e) uform_executor_free(executors[e]);
    free(clips[0]), free(clips[1]), free(jpeg), free(videos), free(images);
    uform_model_free(model);
    return check_finish();
}
