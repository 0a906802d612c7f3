/* The run functions of the sweep's rows (rows_*.c), listed in the table of rows.c. */
#ifndef UFORM_TESTS_RELIABILITY_ROWS_H
#define UFORM_TESTS_RELIABILITY_ROWS_H

#include "sweep.h"

/* rows_core.c */
void sweep_run_executor_for_ram(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_executor_on_node(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_executor_on_pool(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_arena_for_host(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_arena_for_executor(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_arena_growth(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_safetensors_open(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_safetensors_open_memory(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_safetensors_encode(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_safetensors_write(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_executor_drain(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_accessors(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_model.c */
void sweep_run_model_load(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_load_on_executor(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_describe(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_write(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_quantize(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_fingerprint(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_encode(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_encode_on_executor(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_encode_deferred(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_encode_fresh_arena(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_choose(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_text_tokenize(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_model_tokens(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_embedding_truncate(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_published_load(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_published_text(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_jpeg(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_jpeg_progressive(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_jpeg_exif(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_jpeg_cmyk(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_png(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_png16(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_webp(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_webp_alpha(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_gif(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_bmp(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_image_pixels(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_ffmpeg_load(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_video_mp4(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_video_webm(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_video_rotated(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_video_live_webm(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_wav(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_flac(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_mp3(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_ogg(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_m4a(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_audio_samples(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_train.c */
void sweep_run_trainer_init(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_trainer_step(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_trainer_save(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_trainer_snapshot(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_mesh.c */
void sweep_run_mesh_load(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_mesh_bootstrap(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_mesh_bootstrap_tcp(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_mesh_launch(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_media.c */
void sweep_run_media_probe(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_media_prepare(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_prepared_encode(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_index.c */
void sweep_run_index_builder(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_builder_from(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_builder_vectors(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_builder_gather(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_builder_write_members(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_search_f32(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_search_gemm(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_search_screen(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_search_screen_i8(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_search_b1(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_build_graph(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_build_lists(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_build_ondisk(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_search_ondisk(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_build_members(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_ondisk_exchange(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_index_ann_search(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_session.c */
void sweep_run_session_builder(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_session_compile(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_session_invoke(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_session_builder_constant(sweep_fixture_t *fixture, sweep_answer_t *answer);

/* rows_data.c */
void sweep_run_data_manifest(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_folder(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_shards(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_loader(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_recall(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_evaluate(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_trainer_fit(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_index_build(sweep_fixture_t *fixture, sweep_answer_t *answer);
void sweep_run_data_index_build_members(sweep_fixture_t *fixture, sweep_answer_t *answer);

#endif
