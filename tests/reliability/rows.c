/* The sweep's table: one row per public entry point that allocates (and per media kind of the encode
 * verbs). Adding an entry point is one line here and its run function in rows_*.c (see sweep.h);
 * test_sweep_coverage fails when a UFORM_API function of uform.h is called by no rows_*.c file and
 * has no reason in no_row.txt. */
#include "rows.h"

const sweep_row_t sweep_rows[] = {
    /* executors and arenas */
    {"executor_for_ram", sweep_run_executor_for_ram, SWEEP_THREADS},
    {"executor_on_node", sweep_run_executor_on_node, SWEEP_THREADS},
    {"executor_on_pool", sweep_run_executor_on_pool, SWEEP_THREADS},
    {"arena_for_host", sweep_run_arena_for_host, 0},
    {"arena_for_executor", sweep_run_arena_for_executor, 0},
    {"arena_growth", sweep_run_arena_growth, 0},
    {"executor_drain", sweep_run_executor_drain, SWEEP_THREADS},
    {"accessors", sweep_run_accessors, 0},
    /* safetensors */
    {"safetensors_open", sweep_run_safetensors_open, 0},
    {"safetensors_open_memory", sweep_run_safetensors_open_memory, 0},
    {"safetensors_encode", sweep_run_safetensors_encode, 0},
    {"safetensors_write", sweep_run_safetensors_write, 0},
    /* the model */
    {"model_load", sweep_run_model_load, 0},
    {"model_load_on_executor", sweep_run_model_load_on_executor, SWEEP_THREADS},
    {"model_describe", sweep_run_model_describe, 0},
    {"model_write", sweep_run_model_write, 0},
    {"model_quantize", sweep_run_model_quantize, 0},
    {"model_fingerprint", sweep_run_model_fingerprint, 0},
    {"text_encode", sweep_run_text_encode, 0},
    {"text_encode_on_executor", sweep_run_text_encode_on_executor, SWEEP_THREADS},
    {"text_encode_deferred", sweep_run_text_encode_deferred, SWEEP_THREADS},
    {"text_encode_fresh_arena", sweep_run_text_encode_fresh_arena, 0},
    {"trainer_init", sweep_run_trainer_init, 0},
    {"trainer_step", sweep_run_trainer_step, 0},
    {"trainer_save", sweep_run_trainer_save, 0},
    {"trainer_snapshot", sweep_run_trainer_snapshot, 0},
    {"text_choose", sweep_run_text_choose, 0},
    {"text_tokenize", sweep_run_text_tokenize, 0},
    {"model_tokens", sweep_run_model_tokens, 0},
    {"embedding_truncate", sweep_run_embedding_truncate, 0},
    /* a published folder (tests/published's all-MiniLM fixture): its load (JSON files, tokenizer.json,
     * weights), then tokenize and encode with its tower */
    {"published_load", sweep_run_published_load, SWEEP_REPEATS},
    {"published_text", sweep_run_published_text, 0},
    {"image_jpeg", sweep_run_image_jpeg, 0},
    {"image_jpeg_progressive", sweep_run_image_jpeg_progressive, 0},
    {"image_jpeg_exif", sweep_run_image_jpeg_exif, 0},
    {"image_jpeg_cmyk", sweep_run_image_jpeg_cmyk, 0},
    {"image_png", sweep_run_image_png, 0},
    {"image_png16", sweep_run_image_png16, 0},
    {"image_webp", sweep_run_image_webp, 0},
    {"image_webp_alpha", sweep_run_image_webp_alpha, SWEEP_ISOLATE},
#if UFORM_WITH_FFMPEG
    /* first of the rows through FFmpeg: the parent must not have loaded it yet */
    {"ffmpeg_load", sweep_run_ffmpeg_load, SWEEP_FFMPEG | SWEEP_ISOLATE | SWEEP_COLD},
#endif
    /* the collectives module (libuform-gloo.so.4, Gloo, libstdc++), loaded afresh in a child per run */
    {"mesh_load", sweep_run_mesh_load, SWEEP_ISOLATE | SWEEP_COLD | SWEEP_LOADS},
    /* a two-member bootstrap through a job folder, the peer a process of its own per run */
    {"mesh_bootstrap", sweep_run_mesh_bootstrap, SWEEP_ISOLATE | SWEEP_THREADS | SWEEP_LOADS | SWEEP_LONG},
    /* the same at a tcp:// store that member 0 hosts, and a launcher's variables read */
    {"mesh_bootstrap_tcp", sweep_run_mesh_bootstrap_tcp, SWEEP_ISOLATE | SWEEP_THREADS | SWEEP_LOADS | SWEEP_LONG},
    {"mesh_launch", sweep_run_mesh_launch, 0},
    {"image_gif", sweep_run_image_gif, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"image_bmp", sweep_run_image_bmp, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"image_pixels", sweep_run_image_pixels, SWEEP_THREADS},
    {"video_mp4", sweep_run_video_mp4, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"video_webm", sweep_run_video_webm, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"video_rotated", sweep_run_video_rotated, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"video_live_webm", sweep_run_video_live_webm, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"audio_wav", sweep_run_audio_wav, 0},
    {"audio_flac", sweep_run_audio_flac, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"audio_mp3", sweep_run_audio_mp3, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"audio_ogg", sweep_run_audio_ogg, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"audio_m4a", sweep_run_audio_m4a, SWEEP_FFMPEG | SWEEP_ISOLATE},
    {"audio_samples", sweep_run_audio_samples, 0},
    /* media around the verbs: probing, preparing ahead, encoding what was prepared */
    {"media_probe", sweep_run_media_probe, 0},
    {"media_prepare", sweep_run_media_prepare, 0},
    {"prepared_encode", sweep_run_prepared_encode, 0},
    /* indexes: build, extend, open and search */
    {"index_builder", sweep_run_index_builder, 0},
    {"index_builder_from", sweep_run_index_builder_from, 0},
    {"index_builder_vectors", sweep_run_index_builder_vectors, 0},
    {"index_builder_gather", sweep_run_index_builder_gather, 0},
    {"index_builder_write_members", sweep_run_index_builder_write_members, 0},
    {"index_search_f32", sweep_run_index_search_f32, 0},
    {"index_search_gemm", sweep_run_index_search_gemm, 0},
    {"index_search_screen", sweep_run_index_search_screen, 0},
    {"index_search_screen_i8", sweep_run_index_search_screen_i8, 0},
    {"index_search_b1", sweep_run_index_search_b1, 0},
    /* FAISS's OpenMP runtime (libgomp) prints and exits when its own allocations fail ("libgomp: Out
     * of memory allocating N bytes"), and glibc aborts when it cannot allocate a thread's block of a
     * library loaded on demand (libstdc++'s exception globals, first touched by the first throw),
     * and a std::bad_alloc that leaves one of FAISS's OpenMP parallel regions ends in
     * std::terminate (FAISS 1.7.3 catches in some regions, not all): each run in a child of its
     * own, where such an end is a third-party finding.
     * Every allocation is failed: the shim makes and reads the default rule's recipes (HNSW32,
     * IVF<n>,Flat, IVF<n>,PQ<m>np) itself, without index_factory's std::regex parser (13,658 of
     * the 13,894 allocations HNSW32 made through it), so the rows make 236, 254 and 169. Under
     * AddressSanitizer, C++'s operator new is ASan's own, which does not go through malloc: there
     * the rows fail what is allocated through malloc and its kin only (UForm's C side, glibc,
     * libgomp), 147, 190 and 149 allocations, 19 to 23 s for the three with CI's flags. */
    {"index_ann_build_graph", sweep_run_index_ann_build_graph, SWEEP_ISOLATE},
    {"index_ann_build_lists", sweep_run_index_ann_build_lists, SWEEP_ISOLATE},
    /* IVF2,Flat with its lists on disk (uform_index_ann_options_t.ondisk): the runs, the layout,
     * FAISS's OnDiskInvertedLists description and the lists file's rename before the .faiss's; the
     * search row below opens such a pair (the lists file hashed, described and mapped). 267 and 173
     * allocations in the plain build; 199 and 153 under ASan, 23 s and 3 s (2026-12-06, shared cores). */
    {"index_ann_build_ondisk", sweep_run_index_ann_build_ondisk, SWEEP_ISOLATE},
    /* The members' build runs its training, adds and write on a thread of its own (ann_members.c,
     * wait_for), or on the calling thread when no thread starts: OpenMP's and glibc's per-thread
     * caches then differ from the first run's, so the live-block count is not compared (a block
     * or two in 56 of 574 runs without SWEEP_THREADS, 2026-12-06). */
    {"index_ann_build_members", sweep_run_index_ann_build_members, SWEEP_ISOLATE | SWEEP_THREADS},
    /* The on-disk lists' exchange of a members' build (another member's packed batch appended by
     * member 0, uform__ann_ondisk_pack / _append), which a mesh of one never makes; called directly.
     * 178 allocations, 0.3 s in the plain build; 61 (malloc's only) and 29.8 s under ASan with CI's
     * flags, most runs ending in libgomp's exit or an uncaught bad_alloc in FAISS's OpenMP region
     * (third-party, as for the rows above), 2026-12-07, shared cores. */
    {"index_ann_ondisk_exchange", sweep_run_index_ann_ondisk_exchange, SWEEP_ISOLATE},
    {"index_ann_search", sweep_run_index_ann_search, SWEEP_ISOLATE},
    {"index_ann_search_ondisk", sweep_run_index_ann_search_ondisk, SWEEP_ISOLATE},
    /* the tensor-program session */
    {"session_builder", sweep_run_session_builder, 0},
    {"session_builder_constant", sweep_run_session_builder_constant, 0},
    {"session_compile", sweep_run_session_compile, 0},
    {"session_invoke", sweep_run_session_invoke, 0},
    /* data: datasets, loaders, recall, evaluation, the index pipeline */
    {"data_manifest", sweep_run_data_manifest, 0},
    {"data_folder", sweep_run_data_folder, 0},
    /* libarchive prints and exits on some failed allocations ("Fatal Internal Error in libarchive: Out
     * of memory"): each run in a child of its own, where such an exit is a third-party finding */
    {"data_shards", sweep_run_data_shards, SWEEP_ISOLATE},
    {"data_loader", sweep_run_data_loader, SWEEP_THREADS | SWEEP_ISOLATE},
    {"data_recall", sweep_run_data_recall, 0},
    {"data_evaluate", sweep_run_data_evaluate, 0},
    {"trainer_fit", sweep_run_trainer_fit, SWEEP_THREADS},
    {"data_index_build", sweep_run_data_index_build, SWEEP_THREADS},
    /* Over a mesh of one with an IVF structure built by the members' path inside the build: FAISS
     * and OpenMP allocate on their own threads (isolated, as the members' row above). Its lists are
     * on disk, so the members' rounds (stream_parts) are swept: 335 allocations against 325 with
     * the lists in memory; under ASan with CI's long-row stride 40.9 s against 39.3 s (2026-12-07). */
    {"data_index_build_members", sweep_run_data_index_build_members, SWEEP_ISOLATE | SWEEP_THREADS},
};

const size_t sweep_row_count = sizeof sweep_rows / sizeof sweep_rows[0];
