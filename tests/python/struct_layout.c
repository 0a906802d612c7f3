/*
 * Prints the size of every struct the Python binding mirrors and the offset of each of its fields,
 * as the C compiler lays them out: lines "STRUCT sizeof N" (no field can be named sizeof) and "STRUCT FIELD N". test_layout.py
 * compares them with the ctypes mirrors of python/uform/_structs.py.
 */
#include <stddef.h>
#include <stdio.h>

#include "uform/uform.h"

#define SIZE(type) printf(#type " sizeof %zu\n", sizeof(type))
#define FIELD(type, field) printf(#type " " #field " %zu\n", offsetof(type, field))

/* The fields every encode request has, with the verb's inputs handled by the caller. */
#define REQUEST_HEAD(type) FIELD(type, model), FIELD(type, executor), FIELD(type, completion)
#define REQUEST_TAIL(type) \
    FIELD(type, outputs), FIELD(type, arena), FIELD(type, config), FIELD(type, outcome), FIELD(type, encoded)

int main(void) {
    SIZE(uform_outcome_t);
    FIELD(uform_outcome_t, status), FIELD(uform_outcome_t, reserved), FIELD(uform_outcome_t, function);
    FIELD(uform_outcome_t, message);

    SIZE(uform_gpu_device_t);
    FIELD(uform_gpu_device_t, vendor), FIELD(uform_gpu_device_t, vendor_ordinal), FIELD(uform_gpu_device_t, gpu_class);
    FIELD(uform_gpu_device_t, compute_units), FIELD(uform_gpu_device_t, memory_bytes), FIELD(uform_gpu_device_t, name);

    SIZE(uform_progress_t);
    FIELD(uform_progress_t, callback), FIELD(uform_progress_t, state), FIELD(uform_progress_t, steps);

    SIZE(uform_ram_options_t);
    FIELD(uform_ram_options_t, memory_domains), FIELD(uform_ram_options_t, memory_domains_count);
    FIELD(uform_ram_options_t, cpu_class), FIELD(uform_ram_options_t, compute);

    SIZE(uform_matrix_t);
    FIELD(uform_matrix_t, data), FIELD(uform_matrix_t, rows), FIELD(uform_matrix_t, columns);
    FIELD(uform_matrix_t, stride_bytes), FIELD(uform_matrix_t, scalar), FIELD(uform_matrix_t, arena);
    FIELD(uform_matrix_t, generation);

    SIZE(uform_rows_t);
    FIELD(uform_rows_t, matrix), FIELD(uform_rows_t, offsets), FIELD(uform_rows_t, count);

    SIZE(uform_tape_t);
    FIELD(uform_tape_t, data), FIELD(uform_tape_t, offsets), FIELD(uform_tape_t, count);

    SIZE(uform_model_description_t);
    FIELD(uform_model_description_t, size), FIELD(uform_model_description_t, hidden);
    FIELD(uform_model_description_t, depth), FIELD(uform_model_description_t, heads);
    FIELD(uform_model_description_t, mlp), FIELD(uform_model_description_t, embedding);
    FIELD(uform_model_description_t, matryoshka), FIELD(uform_model_description_t, matryoshka_count);
    FIELD(uform_model_description_t, temperature_groups), FIELD(uform_model_description_t, modalities);
    FIELD(uform_model_description_t, text_bytes), FIELD(uform_model_description_t, image_size);
    FIELD(uform_model_description_t, image_patch), FIELD(uform_model_description_t, video_size);
    FIELD(uform_model_description_t, video_patch), FIELD(uform_model_description_t, video_frames);
    FIELD(uform_model_description_t, video_tubelet), FIELD(uform_model_description_t, audio_rate);
    FIELD(uform_model_description_t, audio_seconds), FIELD(uform_model_description_t, audio_mels);
    FIELD(uform_model_description_t, parameters), FIELD(uform_model_description_t, weight_bytes);
    FIELD(uform_model_description_t, residency), FIELD(uform_model_description_t, cpu_class);
    FIELD(uform_model_description_t, compute), FIELD(uform_model_description_t, family);
    FIELD(uform_model_description_t, tokenizer), FIELD(uform_model_description_t, text_tokens);
    FIELD(uform_model_description_t, towers);
    SIZE(uform_tower_description_t);
    FIELD(uform_tower_description_t, hidden), FIELD(uform_tower_description_t, depth);
    FIELD(uform_tower_description_t, heads), FIELD(uform_tower_description_t, mlp);

    SIZE(uform_model_describe_t);
    FIELD(uform_model_describe_t, model), FIELD(uform_model_describe_t, outcome);
    FIELD(uform_model_describe_t, description);

    SIZE(uform_encode_stats_t);
    FIELD(uform_encode_stats_t, items), FIELD(uform_encode_stats_t, tokens), FIELD(uform_encode_stats_t, input_bytes);
    FIELD(uform_encode_stats_t, decode_seconds), FIELD(uform_encode_stats_t, compute_seconds);
    FIELD(uform_encode_stats_t, flops), FIELD(uform_encode_stats_t, arena_bytes);

    SIZE(uform_encode_config_t);
    FIELD(uform_encode_config_t, outputs_scalar), FIELD(uform_encode_config_t, progress);
    FIELD(uform_encode_config_t, stats), FIELD(uform_encode_config_t, dimensions);

    SIZE(uform_encoded_t);
    FIELD(uform_encoded_t, embeddings), FIELD(uform_encoded_t, token_vectors), FIELD(uform_encoded_t, states);

    SIZE(uform_text_encode_t);
    REQUEST_HEAD(uform_text_encode_t), FIELD(uform_text_encode_t, texts), REQUEST_TAIL(uform_text_encode_t);
    SIZE(uform_image_encode_t);
    REQUEST_HEAD(uform_image_encode_t), FIELD(uform_image_encode_t, images), REQUEST_TAIL(uform_image_encode_t);
    SIZE(uform_image_encode_pixels_t);
    REQUEST_HEAD(uform_image_encode_pixels_t), FIELD(uform_image_encode_pixels_t, pixels);
    FIELD(uform_image_encode_pixels_t, heights), FIELD(uform_image_encode_pixels_t, widths);
    REQUEST_TAIL(uform_image_encode_pixels_t);
    SIZE(uform_video_encode_t);
    REQUEST_HEAD(uform_video_encode_t), FIELD(uform_video_encode_t, videos), REQUEST_TAIL(uform_video_encode_t);
    SIZE(uform_audio_encode_t);
    REQUEST_HEAD(uform_audio_encode_t), FIELD(uform_audio_encode_t, recordings), REQUEST_TAIL(uform_audio_encode_t);
    SIZE(uform_audio_encode_samples_t);
    REQUEST_HEAD(uform_audio_encode_samples_t), FIELD(uform_audio_encode_samples_t, samples);
    FIELD(uform_audio_encode_samples_t, sample_rate), REQUEST_TAIL(uform_audio_encode_samples_t);

    SIZE(uform_text_choose_t);
    FIELD(uform_text_choose_t, model), FIELD(uform_text_choose_t, executor), FIELD(uform_text_choose_t, completion);
    FIELD(uform_text_choose_t, texts), FIELD(uform_text_choose_t, choices), FIELD(uform_text_choose_t, groups);
    FIELD(uform_text_choose_t, arena), FIELD(uform_text_choose_t, config), FIELD(uform_text_choose_t, outcome);
    FIELD(uform_text_choose_t, probabilities);

    SIZE(uform_mesh_options_t);
#define MESH_OPTIONS(field) FIELD(uform_mesh_options_t, field)
    MESH_OPTIONS(host_domain_index), MESH_OPTIONS(host_domain_count), MESH_OPTIONS(gpus_per_multimem_domain);
    MESH_OPTIONS(directory), MESH_OPTIONS(job), MESH_OPTIONS(timeout_seconds), MESH_OPTIONS(address);
    MESH_OPTIONS(trainer_config), MESH_OPTIONS(agreement), MESH_OPTIONS(rendezvous), MESH_OPTIONS(launcher);
    MESH_OPTIONS(overlap);

    SIZE(uform_mesh_launch_t);
#define LAUNCH(field) FIELD(uform_mesh_launch_t, field)
    LAUNCH(launcher), LAUNCH(index), LAUNCH(count), LAUNCH(local_index), LAUNCH(local_count), LAUNCH(threads);
    LAUNCH(job), LAUNCH(rendezvous), LAUNCH(rendezvous_from), LAUNCH(variables);

    SIZE(uform_mesh_description_t);
#define MESH(field) FIELD(uform_mesh_description_t, field)
    MESH(gpus_per_host_domain), MESH(gpus_per_multimem_domain), MESH(gpus_per_colocated_domain);
    MESH(host_domain_index), MESH(first_gpu_index), MESH(multimem_tier), MESH(gpu_class);
    MESH(members_per_host_domain), MESH(members_total), MESH(first_member_index);
    MESH(launcher), MESH(local_member_index), MESH(local_members), MESH(overlap);

    SIZE(uform_trainer_config_t);
#define CONFIG(field) FIELD(uform_trainer_config_t, field)
    CONFIG(size), CONFIG(hidden), CONFIG(depth), CONFIG(heads), CONFIG(mlp), CONFIG(embedding), CONFIG(matryoshka);
    CONFIG(matryoshka_count), CONFIG(temperature_groups), CONFIG(modalities), CONFIG(text_bytes), CONFIG(image_size);
    CONFIG(image_patch), CONFIG(video_size), CONFIG(video_patch), CONFIG(video_frames), CONFIG(video_tubelet);
    CONFIG(audio_seconds), CONFIG(audio_mels), CONFIG(learning_rate), CONFIG(beta1), CONFIG(beta2), CONFIG(epsilon);
    CONFIG(weight_decay), CONFIG(clip_norm), CONFIG(warmup_steps), CONFIG(total_steps), CONFIG(contrastive_weight);
    CONFIG(choice_weight), CONFIG(seed), CONFIG(compute), CONFIG(cpu_class), CONFIG(resume), CONFIG(mesh);

    SIZE(uform_trainer_description_t);
#define DESCRIPTION(field) FIELD(uform_trainer_description_t, field)
    DESCRIPTION(model), DESCRIPTION(steps), DESCRIPTION(learning_rate), DESCRIPTION(beta1), DESCRIPTION(beta2);
    DESCRIPTION(epsilon), DESCRIPTION(weight_decay), DESCRIPTION(clip_norm), DESCRIPTION(warmup_steps);
    DESCRIPTION(total_steps), DESCRIPTION(contrastive_weight), DESCRIPTION(choice_weight), DESCRIPTION(seed);

    SIZE(uform_relations_t);
    FIELD(uform_relations_t, lefts), FIELD(uform_relations_t, rights), FIELD(uform_relations_t, groups);
    FIELD(uform_relations_t, count);

    SIZE(uform_trainer_stats_t);
#define STATS(field) FIELD(uform_trainer_stats_t, field)
    STATS(items), STATS(sequences), STATS(tokens), STATS(decode_seconds), STATS(forward_seconds);
    STATS(backward_seconds), STATS(optimizer_seconds), STATS(flops), STATS(exchange_wait_seconds);
    STATS(exchange_seconds), STATS(chunks);

    SIZE(uform_trainer_step_t);
#define STEP(field) FIELD(uform_trainer_step_t, field)
    STEP(trainer), STEP(completion), STEP(modalities), STEP(contents), STEP(bags), STEP(bag_count), STEP(sides);
    STEP(relations), STEP(choices), STEP(choice_targets), STEP(arena), STEP(outputs_scalar), STEP(progress);
    STEP(stats), STEP(learning_rate_override), STEP(outcome), STEP(loss), STEP(contrastive), STEP(choice);
    STEP(learning_rate), STEP(grad_norm), STEP(step), STEP(temperatures), STEP(bag_embeddings), STEP(accumulate);
    STEP(prepared), STEP(failed_content), STEP(failed_member);

    SIZE(uform_trainer_save_t);
    FIELD(uform_trainer_save_t, trainer), FIELD(uform_trainer_save_t, completion), FIELD(uform_trainer_save_t, path);
    FIELD(uform_trainer_save_t, optimizer), FIELD(uform_trainer_save_t, user_metadata);
    FIELD(uform_trainer_save_t, progress), FIELD(uform_trainer_save_t, outcome);

    SIZE(uform_program_t);
    FIELD(uform_program_t, index), FIELD(uform_program_t, generation);

    SIZE(uform_descriptor_t);
    FIELD(uform_descriptor_t, dtype), FIELD(uform_descriptor_t, rank), FIELD(uform_descriptor_t, dims);
    FIELD(uform_descriptor_t, byte_size), FIELD(uform_descriptor_t, alignment);

    /* Data, indexes and media preparation (python/uform/_data_structs.py). */
    SIZE(uform_data_error_t);
    FIELD(uform_data_error_t, status), FIELD(uform_data_error_t, line), FIELD(uform_data_error_t, shard);
    FIELD(uform_data_error_t, content), FIELD(uform_data_error_t, source), FIELD(uform_data_error_t, key);
    FIELD(uform_data_error_t, message);
    SIZE(uform_dataset_options_t);
    FIELD(uform_dataset_options_t, source), FIELD(uform_dataset_options_t, path), FIELD(uform_dataset_options_t, paths);
    FIELD(uform_dataset_options_t, path_count), FIELD(uform_dataset_options_t, seed), FIELD(uform_dataset_options_t, shuffle_buffer);
    FIELD(uform_dataset_options_t, sequential), FIELD(uform_dataset_options_t, partitions), FIELD(uform_dataset_options_t, skip_bad);
    FIELD(uform_dataset_options_t, hidden), FIELD(uform_dataset_options_t, max_sample_bytes);
    SIZE(uform_dataset_description_t);
    FIELD(uform_dataset_description_t, source), FIELD(uform_dataset_description_t, shards), FIELD(uform_dataset_description_t, samples);
    FIELD(uform_dataset_description_t, pairs), FIELD(uform_dataset_description_t, choices), FIELD(uform_dataset_description_t, items);
    FIELD(uform_dataset_description_t, bad), FIELD(uform_dataset_description_t, fingerprint);
    SIZE(uform_dataset_item_t);
    FIELD(uform_dataset_item_t, modality), FIELD(uform_dataset_item_t, key), FIELD(uform_dataset_item_t, key_length);
    FIELD(uform_dataset_item_t, bytes), FIELD(uform_dataset_item_t, size), FIELD(uform_dataset_item_t, text);
    FIELD(uform_dataset_item_t, text_length), FIELD(uform_dataset_item_t, ordinal);
    SIZE(uform_dataset_read_t);
    FIELD(uform_dataset_read_t, dataset), FIELD(uform_dataset_read_t, rewind), FIELD(uform_dataset_read_t, skip), FIELD(uform_dataset_read_t, outcome);
    FIELD(uform_dataset_read_t, done), FIELD(uform_dataset_read_t, item), FIELD(uform_dataset_read_t, error);
    SIZE(uform_loader_options_t);
    FIELD(uform_loader_options_t, dataset), FIELD(uform_loader_options_t, trainer), FIELD(uform_loader_options_t, batch);
    FIELD(uform_loader_options_t, member), FIELD(uform_loader_options_t, members), FIELD(uform_loader_options_t, ahead);
    FIELD(uform_loader_options_t, decode_threads), FIELD(uform_loader_options_t, cursor);
    SIZE(uform_loader_next_t);
    FIELD(uform_loader_next_t, loader), FIELD(uform_loader_next_t, step), FIELD(uform_loader_next_t, outcome);
    FIELD(uform_loader_next_t, done), FIELD(uform_loader_next_t, samples), FIELD(uform_loader_next_t, twins);
    FIELD(uform_loader_next_t, error);
    SIZE(uform_loader_stats_t);
    FIELD(uform_loader_stats_t, batches), FIELD(uform_loader_stats_t, samples), FIELD(uform_loader_stats_t, epoch);
    FIELD(uform_loader_stats_t, skipped), FIELD(uform_loader_stats_t, wait_seconds), FIELD(uform_loader_stats_t, read_seconds);
    FIELD(uform_loader_stats_t, decode_seconds), FIELD(uform_loader_stats_t, bytes_read);
    SIZE(uform_recall_t);
    FIELD(uform_recall_t, queries), FIELD(uform_recall_t, queries_count), FIELD(uform_recall_t, columns);
    FIELD(uform_recall_t, candidates), FIELD(uform_recall_t, candidates_count), FIELD(uform_recall_t, query_labels);
    FIELD(uform_recall_t, candidate_labels), FIELD(uform_recall_t, ks), FIELD(uform_recall_t, ks_count);
    FIELD(uform_recall_t, outcome), FIELD(uform_recall_t, recall);
    SIZE(uform_evaluation_t);
    FIELD(uform_evaluation_t, pairs), FIELD(uform_evaluation_t, text_to_media), FIELD(uform_evaluation_t, media_to_text);
    SIZE(uform_evaluate_t);
    FIELD(uform_evaluate_t, model), FIELD(uform_evaluate_t, executor), FIELD(uform_evaluate_t, dataset);
    FIELD(uform_evaluate_t, arena), FIELD(uform_evaluate_t, batch), FIELD(uform_evaluate_t, ks);
    FIELD(uform_evaluate_t, ks_count), FIELD(uform_evaluate_t, progress), FIELD(uform_evaluate_t, outcome);
    FIELD(uform_evaluate_t, results), FIELD(uform_evaluate_t, error);
    SIZE(uform_index_build_t);
    FIELD(uform_index_build_t, model), FIELD(uform_index_build_t, executor), FIELD(uform_index_build_t, decoder);
    FIELD(uform_index_build_t, datasets), FIELD(uform_index_build_t, dataset_count), FIELD(uform_index_build_t, out);
    FIELD(uform_index_build_t, errors_path), FIELD(uform_index_build_t, dimensions), FIELD(uform_index_build_t, scalar);
    FIELD(uform_index_build_t, modalities), FIELD(uform_index_build_t, batch), FIELD(uform_index_build_t, checkpoint);
    FIELD(uform_index_build_t, resume), FIELD(uform_index_build_t, progress), FIELD(uform_index_build_t, outcome);
    FIELD(uform_index_build_t, indexed), FIELD(uform_index_build_t, failed), FIELD(uform_index_build_t, skipped);
    FIELD(uform_index_build_t, duplicates), FIELD(uform_index_build_t, resumed), FIELD(uform_index_build_t, error);
    SIZE(uform_index_description_t);
    FIELD(uform_index_description_t, count), FIELD(uform_index_description_t, counts), FIELD(uform_index_description_t, dimensions);
    FIELD(uform_index_description_t, scalar), FIELD(uform_index_description_t, fingerprint);
    SIZE(uform_index_hit_t);
    FIELD(uform_index_hit_t, item), FIELD(uform_index_hit_t, score), FIELD(uform_index_hit_t, modality);
    SIZE(uform_index_search_t);
    FIELD(uform_index_search_t, index), FIELD(uform_index_search_t, executor), FIELD(uform_index_search_t, completion);
    FIELD(uform_index_search_t, queries), FIELD(uform_index_search_t, queries_count), FIELD(uform_index_search_t, queries_columns);
    FIELD(uform_index_search_t, queries_stride), FIELD(uform_index_search_t, top), FIELD(uform_index_search_t, modalities);
    FIELD(uform_index_search_t, candidates), FIELD(uform_index_search_t, progress), FIELD(uform_index_search_t, arena);
    FIELD(uform_index_search_t, outcome), FIELD(uform_index_search_t, hits), FIELD(uform_index_search_t, hits_per_query);
    SIZE(uform_index_ann_options_t);
    FIELD(uform_index_ann_options_t, recipe), FIELD(uform_index_ann_options_t, train_rows);
    FIELD(uform_index_ann_options_t, threads);
    SIZE(uform_index_ann_description_t);
    FIELD(uform_index_ann_description_t, count), FIELD(uform_index_ann_description_t, dimensions);
    FIELD(uform_index_ann_description_t, lists), FIELD(uform_index_ann_description_t, code_bytes);
    FIELD(uform_index_ann_description_t, train_rows), FIELD(uform_index_ann_description_t, graph);
    FIELD(uform_index_ann_description_t, recipe);
    SIZE(uform_index_ann_search_t);
    FIELD(uform_index_ann_search_t, ann), FIELD(uform_index_ann_search_t, executor), FIELD(uform_index_ann_search_t, completion);
    FIELD(uform_index_ann_search_t, queries), FIELD(uform_index_ann_search_t, queries_count);
    FIELD(uform_index_ann_search_t, queries_columns), FIELD(uform_index_ann_search_t, queries_stride);
    FIELD(uform_index_ann_search_t, top), FIELD(uform_index_ann_search_t, modalities), FIELD(uform_index_ann_search_t, nprobe);
    FIELD(uform_index_ann_search_t, ef), FIELD(uform_index_ann_search_t, rerank), FIELD(uform_index_ann_search_t, progress);
    FIELD(uform_index_ann_search_t, arena), FIELD(uform_index_ann_search_t, outcome), FIELD(uform_index_ann_search_t, hits);
    FIELD(uform_index_ann_search_t, hits_per_query);
    SIZE(uform_prepared_t);
    FIELD(uform_prepared_t, modality), FIELD(uform_prepared_t, count), FIELD(uform_prepared_t, rows_per_item);
    FIELD(uform_prepared_t, rows), FIELD(uform_prepared_t, item_outcomes), FIELD(uform_prepared_t, failed);
    SIZE(uform_media_prepare_t);
    FIELD(uform_media_prepare_t, model), FIELD(uform_media_prepare_t, executor), FIELD(uform_media_prepare_t, completion);
    FIELD(uform_media_prepare_t, modality), FIELD(uform_media_prepare_t, files), FIELD(uform_media_prepare_t, arena);
    FIELD(uform_media_prepare_t, progress), FIELD(uform_media_prepare_t, outcome), FIELD(uform_media_prepare_t, prepared);
    SIZE(uform_prepared_encode_t);
    FIELD(uform_prepared_encode_t, model), FIELD(uform_prepared_encode_t, executor), FIELD(uform_prepared_encode_t, completion);
    FIELD(uform_prepared_encode_t, prepared), FIELD(uform_prepared_encode_t, outputs), FIELD(uform_prepared_encode_t, arena);
    FIELD(uform_prepared_encode_t, config), FIELD(uform_prepared_encode_t, outcome), FIELD(uform_prepared_encode_t, encoded);
    return 0;
}
